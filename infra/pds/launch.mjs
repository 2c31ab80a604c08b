// A local AT Protocol PDS (the reference implementation, @atproto/pds) and a PLC directory
// (@did-plc/server, in memory), both bound to 127.0.0.1 on free ports, with their data in a
// fresh temporary folder. The PDS proxies `app.bsky.*` to an AppView as a production one does;
// here that AppView is a recording server (recordings/README.md) the launcher runs too.
// Prints one line, `READY {"pds": URL, "plc": URL, "appview": URL}`, once all answer, and
// stops them (removing the folder) on SIGTERM or SIGINT.
//
// Usage: node launch.mjs   (infra/emulators/start.sh runs it for the test suite)

import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer as createHttpServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { PDS, envToCfg, envToSecrets, readEnv } from '@atproto/pds'
import { Secp256k1Keypair } from '@atproto/crypto'
import plc from '@did-plc/server'

const { PlcServer, Database } = plc

// Express listens on every interface unless told otherwise: hold it to loopback.
function loopbackOnly(app) {
  const listen = app.listen.bind(app)
  app.listen = (port, ...rest) => listen(port, '127.0.0.1', ...rest)
}

async function freePort() {
  const { createServer } = await import('node:net')
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

const dir = mkdtempSync(join(tmpdir(), 'harmonia-pds-'))
const plcPort = await freePort()
const plcServer = PlcServer.create({ db: Database.mock(), port: plcPort })
loopbackOnly(plcServer.app)
await plcServer.start()

// The recorded AppView: lexicon-shaped answers from recordings/, counts a test sets.
const recordings = process.env.HARMONIA_APPVIEW_RECORDINGS
const recorded = (name) => JSON.parse(readFileSync(join(recordings, `${name}.json`), 'utf8'))
const engagement = new Map()
const failing = new Map()
function send(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' })
  res.end(JSON.stringify(body))
}
async function readJson(req) {
  let text = ''
  for await (const chunk of req) text += chunk
  return JSON.parse(text || '{}')
}
const appview = createHttpServer(async (req, res) => {
  try {
    const url = new URL(req.url, 'http://appview.invalid')
    if (req.method === 'POST' && url.pathname === '/_recording/engagement') {
      const set = await readJson(req)
      engagement.set(set.uri, set)
      return send(res, 200, {})
    }
    if (req.method === 'POST' && url.pathname === '/_recording/fail') {
      const set = await readJson(req)
      failing.set(set.method, set.times)
      return send(res, 200, {})
    }
    const method = url.pathname.replace(/^\/xrpc\//, '')
    if ((failing.get(method) ?? 0) > 0) {
      failing.set(method, failing.get(method) - 1)
      return send(res, 502, { error: 'UpstreamFailure', message: 'recorded failure' })
    }
    if (method === 'app.bsky.feed.getPosts') {
      const template = recorded(method).posts[0]
      const posts = url.searchParams.getAll('uris').map((uri) => {
        const counts = engagement.get(uri) ?? {}
        const did = uri.replace(/^at:\/\//, '').split('/')[0]
        return {
          ...template,
          uri,
          author: { ...template.author, did },
          replyCount: counts.replyCount ?? 0,
          repostCount: counts.repostCount ?? 0,
          likeCount: counts.likeCount ?? 0,
          quoteCount: counts.quoteCount ?? 0,
        }
      })
      return send(res, 200, { posts })
    }
    if (method === 'app.bsky.unspecced.getTrendingTopics') {
      return send(res, 200, recorded(method))
    }
    return send(res, 501, { error: 'MethodNotImplemented', message: `no recording for ${method}` })
  } catch (e) {
    return send(res, 500, { error: 'InternalServerError', message: String(e) })
  }
})
const appviewPort = await freePort()
await new Promise((resolve) => appview.listen(appviewPort, '127.0.0.1', resolve))

const pdsPort = await freePort()
const rotationKey = await Secp256k1Keypair.create({ exportable: true })
const env = {
  ...readEnv(),
  devMode: true,
  port: pdsPort,
  hostname: 'localhost',
  dataDirectory: dir,
  blobstoreDiskLocation: join(dir, 'blobs'),
  didPlcUrl: `http://localhost:${plcPort}`,
  serviceHandleDomains: ['.test'],
  adminPassword: randomBytes(16).toString('hex'),
  jwtSecret: randomBytes(32).toString('hex'),
  plcRotationKeyK256PrivateKeyHex: Buffer.from(await rotationKey.export()).toString('hex'),
  inviteRequired: false,
  disableSsrfProtection: true,
  rateLimitsEnabled: false,
  crawlers: [],
  bskyAppViewUrl: `http://127.0.0.1:${appviewPort}`,
  bskyAppViewDid: 'did:web:appview.recording.test',
}
const pds = await PDS.create(envToCfg(env), envToSecrets(env))
loopbackOnly(pds.app)
await pds.start()

const urls = {
  pds: `http://127.0.0.1:${pdsPort}`,
  plc: `http://127.0.0.1:${plcPort}`,
  appview: `http://127.0.0.1:${appviewPort}`,
}
const health = await fetch(`${urls.pds}/xrpc/_health`)
if (!health.ok) {
  console.error(`the PDS did not answer its health check (${health.status})`)
  process.exit(1)
}
console.log(`READY ${JSON.stringify(urls)}`)

let stopping = false
async function stop() {
  if (stopping) return
  stopping = true
  await pds.destroy().catch(() => {})
  await plcServer.destroy().catch(() => {})
  appview.close()
  rmSync(dir, { recursive: true, force: true })
  process.exit(0)
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
