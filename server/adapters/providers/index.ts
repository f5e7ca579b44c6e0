import type { Deployment } from '../../core/catalog'
import type { Provider } from '../../core/ports'
import { OpenAICompatibleProvider } from './openai-compatible'
import { SimulatorProvider } from './simulator'

/** The provider serving each deployment: one shared, stateless instance per provider kind. */
export function createProviderRegistry(): (deployment: Deployment) => Provider {
  const providers: Record<Deployment['provider'], Provider> = {
    simulator: new SimulatorProvider(),
    'openai-compatible': new OpenAICompatibleProvider(),
  }
  return (deployment) => providers[deployment.provider]
}
