/** One message as the fake SMTP server received it. */
export interface ReceivedMail {
  from: string
  to: string[]
  /** The decoded `AUTH PLAIN` user and password, when the client logged in. */
  auth: { user: string; pass: string } | null
  /** The DATA section: headers and body, with CRLF line ends and dot-stuffing undone. */
  data: string
}

interface Session {
  buffer: string
  inData: boolean
  dataLines: string[]
  from: string
  to: string[]
  auth: ReceivedMail['auth']
}

function newSession(): Session {
  return { buffer: '', inData: false, dataLines: [], from: '', to: [], auth: null }
}

/**
 * A minimal SMTP server on 127.0.0.1 (port 0) that accepts `AUTH PLAIN`, records every message it
 * is given, and refuses recipients when `refuseRecipients` is set. No TLS: clients see no STARTTLS.
 */
export function startFakeSmtp(options: { refuseRecipients?: boolean } = {}) {
  const received: ReceivedMail[] = []
  const server = Bun.listen<Session>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(socket) {
        socket.data = newSession()
        socket.write('220 fake-smtp ready\r\n')
      },
      data(socket, chunk) {
        const session = socket.data
        session.buffer += chunk.toString('utf8')
        let end: number
        while ((end = session.buffer.indexOf('\r\n')) !== -1) {
          const line = session.buffer.slice(0, end)
          session.buffer = session.buffer.slice(end + 2)
          const reply = answer(session, line, options, received)
          if (reply) socket.write(reply)
          if (reply.startsWith('221')) socket.end()
        }
      },
    },
  })
  return { url: `smtp://127.0.0.1:${server.port}`, port: server.port, received, stop: () => server.stop(true) }
}

function answer(session: Session, line: string, options: { refuseRecipients?: boolean }, received: ReceivedMail[]): string {
  if (session.inData) {
    if (line !== '.') {
      session.dataLines.push(line.startsWith('..') ? line.slice(1) : line)
      return ''
    }
    received.push({ from: session.from, to: session.to, auth: session.auth, data: session.dataLines.join('\r\n') })
    Object.assign(session, { inData: false, dataLines: [], from: '', to: [] })
    return '250 queued\r\n'
  }
  const [verb = '', ...rest] = line.split(' ')
  switch (verb.toUpperCase()) {
    case 'EHLO':
      return '250-fake-smtp\r\n250-AUTH PLAIN\r\n250 8BITMIME\r\n'
    case 'HELO':
      return '250 fake-smtp\r\n'
    case 'AUTH': {
      const [, user = '', pass = ''] = Buffer.from(rest[1] ?? '', 'base64').toString('utf8').split('\0')
      session.auth = { user, pass }
      return '235 accepted\r\n'
    }
    case 'MAIL':
      session.from = /<(.*)>/.exec(line)?.[1] ?? ''
      return '250 ok\r\n'
    case 'RCPT':
      if (options.refuseRecipients) return '550 no such mailbox here\r\n'
      session.to.push(/<(.*)>/.exec(line)?.[1] ?? '')
      return '250 ok\r\n'
    case 'DATA':
      session.inData = true
      return '354 go ahead\r\n'
    case 'RSET':
      Object.assign(session, { from: '', to: [] })
      return '250 ok\r\n'
    case 'QUIT':
      return '221 bye\r\n'
    default:
      return '502 not implemented\r\n'
  }
}
