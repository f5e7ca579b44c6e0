export { PlaygroundPage } from './playground-page'
