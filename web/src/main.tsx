import { render } from 'preact'

render(<main>nilegate</main>, document.getElementById('app')!)
