/** Platform-operator operations under /v1/admin/*. */
export interface OperatorStore {}
