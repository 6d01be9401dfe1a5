// The node-redlock row of RedLock for Java's benchmark, run by the Java benchmark (NodeRedlock.java)
// as a child process: `node bench.mjs <ttl-ms> <redis-uri>...`, in the directory where `npm ci`
// installed package-lock.json. It connects one ioredis client per master, prints one line,
//   ready node=<version> redlock=<version> ioredis=<version>
// then answers one line on stdout for each command line it reads on stdin:
//   cycles <count> <key-prefix>
//     <count> acquire+release cycles one after another, on keys <key-prefix>0, 1, ...
//     -> "cycles <failed> <ns> <ns> ..." (each completed cycle's duration in nanoseconds)
//   loops <concurrency> <millis> <key-prefix>
//     <concurrency> async loops of acquire+release on keys of their own, for <millis> ms: the
//     "threads" of a throughput block (one process, one event-loop thread, one connection a master)
//     -> "loops <ops> <failed> <elapsed-ns> <ns> <ns> ..."
//   quit
//     closes the clients and exits (as does the end of stdin, so it never outlives the benchmark).
// A cycle is what a user of node-redlock writes: `const lock = await redlock.acquire([key], ttl);
// await lock.release();` with retryCount 0 (one attempt, like RedLock's tryAcquire). The first
// failure's reason goes to stderr.
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import Redis from "ioredis";
import Redlock from "redlock";

const ttl = Number(process.argv[2]);
const uris = process.argv.slice(3);
if (!Number.isInteger(ttl) || ttl <= 0 || uris.length === 0) {
  console.error("usage: node bench.mjs <ttl-ms> <redis-uri>...");
  process.exit(2);
}

const clients = uris.map((uri) => new Redis(uri, { lazyConnect: true }));
await Promise.all(clients.map((client) => client.connect()));
const redlock = new Redlock(clients, { retryCount: 0 });

let reported = false;
function failed(error) {
  if (!reported) {
    reported = true;
    console.error(`first failed cycle: ${error && error.stack ? error.stack : error}`);
  }
}

async function cycle(key) {
  const lock = await redlock.acquire([key], ttl);
  await lock.release();
}

async function cycles(count, prefix) {
  const durations = [];
  let failures = 0;
  for (let i = 0; i < count; i++) {
    const before = process.hrtime.bigint();
    try {
      await cycle(prefix + i);
      durations.push(process.hrtime.bigint() - before);
    } catch (error) {
      failures++;
      failed(error);
    }
  }
  return `cycles ${failures} ${durations.join(" ")}`.trimEnd();
}

async function loops(concurrency, millis, prefix) {
  const start = process.hrtime.bigint();
  const end = start + BigInt(millis) * 1_000_000n;
  const durations = [];
  let ops = 0;
  let failures = 0;
  let lastFinish = end;
  async function loop(index) {
    let i = 0;
    let now = process.hrtime.bigint();
    while (now < end) {
      try {
        await cycle(`${prefix}${index}:${i++}`);
        const after = process.hrtime.bigint();
        durations.push(after - now);
        ops++;
        now = after;
      } catch (error) {
        failures++;
        failed(error);
        now = process.hrtime.bigint();
      }
    }
    if (now > lastFinish) {
      lastFinish = now;
    }
  }
  const running = [];
  for (let index = 0; index < concurrency; index++) {
    running.push(loop(index));
  }
  await Promise.all(running);
  return `loops ${ops} ${failures} ${lastFinish - start} ${durations.join(" ")}`.trimEnd();
}

async function quit() {
  await redlock.quit().catch(() => {});
  process.exit(0);
}

// Read from the installed packages: redlock's "exports" does not export its package.json.
function installed(name) {
  const file = new URL(`./node_modules/${name}/package.json`, import.meta.url);
  return JSON.parse(readFileSync(file, "utf8")).version;
}
const versions = [
  `node=${process.versions.node}`,
  `redlock=${installed("redlock")}`,
  `ioredis=${installed("ioredis")}`,
];
process.stdout.write(`ready ${versions.join(" ")}\n`);

// One command at a time, in order: the benchmark waits for each answer before it sends the next.
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  const [command, ...args] = line.trim().split(/\s+/);
  let answer;
  if (command === "cycles") {
    answer = await cycles(Number(args[0]), args[1]);
  } else if (command === "loops") {
    answer = await loops(Number(args[0]), Number(args[1]), args[2]);
  } else if (command === "quit") {
    await quit();
  } else {
    answer = `error unknown command '${line}'`;
  }
  process.stdout.write(answer + "\n");
}
await quit();
