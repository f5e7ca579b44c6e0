import './admin.css'

export { AdminDeploymentsPage } from './deployments'
export { AdminModelsPage } from './models'
export { AdminOrganizationPage } from './organization'
export { AdminOrganizationsPage } from './organizations'
export { AdminUsersPage } from './users'
