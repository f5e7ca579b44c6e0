// Lua scripts are imported as text (`with { type: 'text' }`) and sent to Redis.
declare module '*.lua' {
  const source: string
  export default source
}
