// A local AT Protocol PDS (the reference implementation, @atproto/pds) and a PLC directory
// (@did-plc/server, in memory), both bound to 127.0.0.1 on free ports, with their data in a
// fresh temporary folder. Prints one line, `READY {"pds": URL, "plc": URL}`, once both answer,
// and stops both (removing the folder) on SIGTERM or SIGINT.
//
// Usage: node launch.mjs   (infra/emulators/start.sh runs it for the test suite)

import { mkdtempSync, rmSync } from 'node:fs'
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
}
const pds = await PDS.create(envToCfg(env), envToSecrets(env))
loopbackOnly(pds.app)
await pds.start()

const urls = { pds: `http://127.0.0.1:${pdsPort}`, plc: `http://127.0.0.1:${plcPort}` }
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
  rmSync(dir, { recursive: true, force: true })
  process.exit(0)
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
