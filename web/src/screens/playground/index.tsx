import './playground.css'

export { PlaygroundPage } from './playground-page'
