// Starts one `trellis serve` on a free loopback port with a fresh SQLite database, from a fresh
// temporary directory (as a user who downloaded the binary would), and stops it after the run.
// The web app is the one built into the binary unless TRELLIS_WEB_DIR names a folder. Tests read
// the address from BASE_URL and the admin password from TRELLIS_E2E_ADMIN_PASSWORD (environment
// set here reaches the test workers).
import { spawn, ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 10_000;
// Tracing may colour its output; the address must be read from plain text.
const ANSI = /\x1b\[[0-9;]*m/g;
const LISTENING = /listening on (?:https?:\/\/)?((?:\d{1,3}\.){3}\d{1,3}:\d+|\[[0-9a-fA-F:]+\]:\d+)/;

export default async function globalSetup(): Promise<() => Promise<void>> {
  const bin = process.env.TRELLIS_BIN;
  if (!bin) {
    throw new Error('TRELLIS_BIN is not set: point it at the trellis server binary (cargo xtask test does this)');
  }
  if (!fs.existsSync(bin)) {
    throw new Error(`TRELLIS_BIN=${bin} does not exist; build the server first`);
  }
  const env: NodeJS.ProcessEnv = { ...process.env };
  const webDir = process.env.TRELLIS_WEB_DIR;
  if (webDir) {
    if (!fs.existsSync(path.join(webDir, 'index.html'))) {
      throw new Error(`TRELLIS_WEB_DIR=${webDir} has no index.html; build the SPA first (cargo xtask spa)`);
    }
    env.TRELLIS_WEB_DIR = path.resolve(webDir);
  } else {
    delete env.TRELLIS_WEB_DIR;
  }

  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'trellis-e2e-'));
  const password = `e2e-${randomBytes(12).toString('hex')}`;
  const server = spawn(bin, ['serve', '--listen', '127.0.0.1:0'], {
    // Nothing of the checkout is reachable from here: the app must come from the binary.
    cwd: dataDir,
    env: {
      ...env,
      DATABASE_URL: `sqlite://${path.join(dataDir, 'trellis.db')}`,
      TRELLIS_ADMIN_PASSWORD: password,
      // The alert e2e posts to a receiver the test runs on loopback; everything else stays refused.
      TRELLIS_HTTP_ALLOW: '127.0.0.1/32',
      NO_COLOR: '1',
      RUST_LOG: process.env.RUST_LOG || 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });

  const log: string[] = [];
  const address = await waitForAddress(server, log);
  process.env.BASE_URL = `http://${address}`;
  process.env.TRELLIS_E2E_ADMIN_PASSWORD = password;
  // Its database and master key, for specs that back it up and restore it (cluster.spec.ts).
  process.env.TRELLIS_E2E_DATA_DIR = dataDir;
  console.log(`[e2e] trellis listening on ${process.env.BASE_URL}`);

  return async () => {
    await stop(server);
    // Keep the server's log with the other artifacts; the database goes.
    const results = path.join(__dirname, 'test-results');
    fs.mkdirSync(results, { recursive: true });
    fs.writeFileSync(path.join(results, 'server.log'), log.join(''));
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
}

function waitForAddress(server: ChildProcess, log: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const fail = (why: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      server.kill('SIGKILL');
      reject(new Error(`${why}\n--- server output ---\n${log.join('')}`));
    };
    const timer = setTimeout(() => fail(`trellis did not log "listening on" within ${READY_TIMEOUT_MS / 1000} s`), READY_TIMEOUT_MS);
    const onData = (chunk: Buffer) => {
      const text = chunk.toString('utf8').replace(ANSI, '');
      log.push(text);
      const match = LISTENING.exec(log.join(''));
      if (match && !settled) {
        settled = true;
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    server.stdout!.on('data', onData);
    server.stderr!.on('data', onData);
    server.on('error', (err) => fail(`could not start ${process.env.TRELLIS_BIN}: ${err.message}`));
    server.on('exit', (code, signal) => fail(`trellis exited before listening (code ${code}, signal ${signal})`));
  });
}

// SIGTERM lets the server drain as it would in production; SIGKILL only if it hangs.
async function stop(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  server.kill('SIGTERM');
  const timedOut = await Promise.race([
    exited.then(() => false),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(true), STOP_TIMEOUT_MS)),
  ]);
  if (timedOut) {
    console.warn('[e2e] trellis did not stop after SIGTERM; killing it');
    server.kill('SIGKILL');
    await exited;
  }
}
