// A real MCP TypeScript SDK server with the SDK's experimental tasks (protocol 2025-11-25), over stdio or
// Streamable HTTP, for the task samples. Runs from the pinned npm folder of scripts/record_task_samples.py
// (@modelcontextprotocol/sdk at the version pinned there), which copies this file next to its
// node_modules. The SDK's McpServer with its InMemoryTaskStore: the SDK answers tasks/get, tasks/result,
// tasks/list and tasks/cancel itself; nothing here changes how it speaks.
//
// One tool, export_ledger(steps), destructive and non-idempotent, registered with
// server.experimental.tasks.registerToolTask the way the SDK's own example does: createTask makes the
// task and starts the work in the background; every 0.3 s the work exports a record (told on stderr) and
// sends notifications/progress on the call's token (through the server, not tied to the call); at the end it
// stores the result (storeTaskResult, which sends notifications/tasks/status). It stops early when the
// task store says the task is no longer working.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { InMemoryTaskMessageQueue, InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';
import { z } from 'zod';

const STEP_MS = 300;
const exported = [];
const note = text => process.stderr.write(`[ts-task-server ${(Date.now() / 1000).toFixed(3)}] ${text}\n`);
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

const server = new McpServer(
    { name: 'cancelwire-ts-task-sample-server', version: '1.0' },
    {
        capabilities: { tasks: { requests: { tools: { call: {} } }, cancel: {}, list: {} } },
        taskStore: new InMemoryTaskStore(),
        taskMessageQueue: new InMemoryTaskMessageQueue()
    }
);

async function work(taskId, steps, token, extra) {
    let done = 0;
    for (let i = 1; i <= steps; i++) {
        await sleep(STEP_MS);
        const status = (await extra.taskStore.getTask(taskId)).status;
        if (status !== 'working') {
            note(`export_ledger: task ${taskId} is ${status}, stopping after ${done} records`);
            return;
        }
        exported.push(`record-${i}`);
        done = i;
        note(`export_ledger: task ${taskId} exported record-${i}`);
        if (token !== undefined) {
            // Not extra.sendNotification: over Streamable HTTP that is tied to the call's POST stream, which
            // the CreateTaskResult ended, and it throws "No connection established for request ID"
            // (the task then stays `working` for ever). Unrelated, it takes the GET stream on HTTP.
            await server.server.notification({
                method: 'notifications/progress',
                params: { progressToken: token, progress: i, total: steps, message: `exported record ${i}/${steps}` }
            });
        }
    }
    try {
        await extra.taskStore.storeTaskResult(taskId, 'completed', {
            content: [{ type: 'text', text: `exported ${done} records` }]
        });
    } catch (error) {
        note(`export_ledger: task ${taskId} result not stored: ${error.message}`);
    }
}

server.experimental.tasks.registerToolTask(
    'export_ledger',
    {
        description: 'Export `steps` ledger records, one every 0.3 s, reporting progress after each.',
        inputSchema: { steps: z.number().int() },
        annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false }
    },
    {
        async createTask({ steps }, extra) {
            const task = await extra.taskStore.createTask({ ttl: extra.taskRequestedTtl, pollInterval: STEP_MS });
            work(task.taskId, steps, extra._meta?.progressToken, extra).catch(error => note(`work failed: ${error}`));
            return { task };
        },
        async getTask(_args, { taskId, taskStore }) {
            return await taskStore.getTask(taskId);
        },
        async getTaskResult(_args, { taskId, taskStore }) {
            return await taskStore.getTaskResult(taskId);
        }
    }
);

// Usage: node task_ts_server.mjs stdio
//        node task_ts_server.mjs http PORT   (prints READY once it listens on 127.0.0.1:PORT; SIGINT stops it)
const stop = () => {
    note(`side effects performed: ${JSON.stringify(exported)}`);
    process.exit(0);
};
const [transport, port] = process.argv.slice(2);
if (transport === 'http') {
    // One session: the SDK's Node transport with session ids, as in the SDK's own examples.
    const http = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID() });
    await server.connect(http);
    const listener = createServer((req, res) => http.handleRequest(req, res));
    listener.listen(Number(port), '127.0.0.1', () => process.stdout.write('READY\n'));
    process.on('SIGINT', stop);
    setTimeout(stop, 40000).unref();
} else {
    process.stdin.on('end', stop);
    await server.connect(new StdioServerTransport());
}
