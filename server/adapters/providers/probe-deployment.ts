import type { Deployment } from '../../core/catalog'

/**
 * The active health probe of an openai-compatible deployment: `GET {base_url}/models` with the
 * deployment's key, answered with a 2xx within its connect timeout. Every server the gateway fronts
 * (vLLM, SGLang, TGI, llama.cpp, Ollama, hosted APIs) lists its models there, and answers it while
 * a model is still loading only with an error. The reasons it rejects with name neither the key nor
 * the URL.
 */
export async function probeDeployment(deployment: Deployment): Promise<void> {
  const headers: Record<string, string> = { accept: 'application/json' }
  if (deployment.apiKeyEnv) {
    const key = process.env[deployment.apiKeyEnv]
    if (!key) throw new Error(`the environment variable ${deployment.apiKeyEnv} that holds its key is not set`)
    headers.authorization = `Bearer ${key}`
  }
  const timeoutMs = deployment.timeouts.connectMs
  let response: Response
  try {
    response = await fetch(`${deployment.baseUrl}/models`, { headers, signal: AbortSignal.timeout(timeoutMs) })
    // Read to the end, so the connection can serve the next probe or call.
    await response.arrayBuffer()
  } catch (error) {
    throw new Error(error instanceof Error && error.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : 'it could not be reached')
  }
  if (!response.ok) throw new Error(`it answered HTTP ${response.status}`)
}
