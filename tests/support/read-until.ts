/** What a stream gave up to and including `pattern`; fails if the stream ends before it. */
export async function readUntil(reader: ReadableStreamDefaultReader<Uint8Array>, pattern: string): Promise<string> {
  const decoder = new TextDecoder()
  let text = ''
  while (!text.includes(pattern)) {
    const { done, value } = await reader.read()
    if (done) throw new Error(`the stream ended before '${pattern}': ${text}`)
    text += decoder.decode(value, { stream: true })
  }
  return text
}
