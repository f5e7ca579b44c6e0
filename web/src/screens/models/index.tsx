export { ModelPage } from './model-page'
export { ModelsPage } from './models-page'
