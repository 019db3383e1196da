// A real MCP TypeScript SDK 2.x server (@modelcontextprotocol/server, version pinned in package.json here)
// for the samples of sample_captures/ts2sdk/. scripts/record_ts2_samples.py installs package-lock.json in
// an npm folder and copies this file next to its node_modules. Only SDK code speaks on the wire: the SDK's
// own entry points serve both protocol eras from one factory (serveStdio on stdio; createMcpHandler on
// HTTP, mounted on node:http with @modelcontextprotocol/node's toNodeHandler, as the SDK's docs say).
//
// Tools, as the Python and Go sample servers have them (a ledger in memory that a cancelled call may or may
// not change, and a read to check it):
//   append_ledger(entry, steps)  no annotations: `steps` steps 0.5 s apart, a progress notification before
//                                each; checks its abort signal (ctx.mcpReq.signal) after each step and
//                                throws it when set; appends `entry` at the end
//   stamp_ledger(entry, steps)   no annotations: the same steps, but ignores its abort signal and appends
//                                `entry #n` after every step (the side effect happens step by step)
//   read_ledger()                readOnlyHint: the ledger, at once
//   add(a, b)                    readOnlyHint: a + b
// Every step, side effect and abort is told on stderr with a timestamp.
//
// Usage: node server.mjs stdio
//        node server.mjs http PORT   (prints READY once it listens on 127.0.0.1:PORT; SIGINT stops it)
//        node server.mjs http-sessions PORT
// `http` is the SDK's 2.x HTTP entry, createMcpHandler: 2026-07-28 per request, and 2025-era traffic through
// its default stateless fallback (a fresh server instance for every POST). `http-sessions` is the 2025-era
// sessionful wiring the SDK keeps (one McpServer on a NodeStreamableHTTPServerTransport with session ids),
// for one client.
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { NodeStreamableHTTPServerTransport, toNodeHandler } from '@modelcontextprotocol/node';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { z } from 'zod';

const STEP_MS = 500;
const LEDGER = [];
const note = text => process.stderr.write(`[ts2-server ${(Date.now() / 1000).toFixed(3)}] ${text}\n`);
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));
const READ_ONLY = { readOnlyHint: true };

async function progress(ctx, step, steps) {
    const token = ctx.mcpReq._meta?.progressToken;
    if (token === undefined) return;
    await ctx.mcpReq.notify({
        method: 'notifications/progress',
        params: { progressToken: token, progress: step, total: steps, message: `step ${step + 1} of ${steps}` }
    });
}

function factory() {
    const server = new McpServer({ name: 'cancelwire-ts2-sample-server', version: '1.0' }, { capabilities: { tools: {} } });
    server.registerTool(
        'append_ledger',
        {
            description: 'Append an entry to the ledger after `steps` slow steps (reports progress); stops when cancelled.',
            inputSchema: z.object({ entry: z.string(), steps: z.number().int() })
        },
        async ({ entry, steps }, ctx) => {
            const { id, signal } = ctx.mcpReq;
            signal.addEventListener('abort', () => note(`append_ledger (id ${id}): abort signal: ${signal.reason}`));
            for (let step = 0; step < steps; step++) {
                await progress(ctx, step, steps);
                await sleep(STEP_MS);
                if (signal.aborted) {
                    note(`append_ledger (id ${id}): cancelled after step ${step + 1}, nothing appended`);
                    throw signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason));
                }
            }
            LEDGER.push(entry);
            note(`append_ledger (id ${id}): appended ${JSON.stringify(entry)}`);
            return { content: [{ type: 'text', text: `appended ${JSON.stringify(entry)}; ledger has ${LEDGER.length} entries` }] };
        }
    );
    server.registerTool(
        'stamp_ledger',
        {
            description: 'Append `entry #n` to the ledger at each of `steps` slow steps (reports progress); ignores cancellation.',
            inputSchema: z.object({ entry: z.string(), steps: z.number().int() })
        },
        async ({ entry, steps }, ctx) => {
            const { id, signal } = ctx.mcpReq;
            signal.addEventListener('abort', () => note(`stamp_ledger (id ${id}): abort signal (ignored): ${signal.reason}`));
            for (let step = 0; step < steps; step++) {
                await progress(ctx, step, steps);
                await sleep(STEP_MS);
                LEDGER.push(`${entry} #${step + 1}`);
                note(`stamp_ledger (id ${id}): appended ${JSON.stringify(`${entry} #${step + 1}`)}${signal.aborted ? ' after the abort' : ''}`);
            }
            note(`stamp_ledger (id ${id}): returns`);
            return { content: [{ type: 'text', text: `stamped ${steps} entries; ledger has ${LEDGER.length} entries` }] };
        }
    );
    server.registerTool('read_ledger', { description: 'The ledger, oldest first.', annotations: READ_ONLY }, async () => ({
        content: [{ type: 'text', text: JSON.stringify(LEDGER) }]
    }));
    server.registerTool(
        'add',
        { description: 'a + b.', inputSchema: z.object({ a: z.number(), b: z.number() }), annotations: READ_ONLY },
        async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] })
    );
    return server;
}

const stop = () => {
    note(`ledger at exit: ${JSON.stringify(LEDGER)}`);
    process.exit(0);
};
const [transport, port] = process.argv.slice(2);
const onerror = error => note(`SDK error: ${error.message}`);
if (transport === 'http' || transport === 'http-sessions') {
    let listener;
    if (transport === 'http') {
        listener = createServer(toNodeHandler(createMcpHandler(factory, { onerror })));
    } else {
        const http = new NodeStreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID() });
        http.onerror = onerror;
        await factory().connect(http);
        listener = createServer((req, res) => http.handleRequest(req, res));
    }
    listener.listen(Number(port), '127.0.0.1', () => process.stdout.write('READY\n'));
    process.on('SIGINT', stop);
    setTimeout(stop, 60000).unref();
} else {
    process.stdin.on('end', stop);
    serveStdio(factory, { onerror });
}
