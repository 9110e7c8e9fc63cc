// A real MCP client (the official TypeScript SDK) against a running Hearth:
// connect over streamable HTTP with a bearer token, list tools, store and
// search. Prints one JSON object for the Go test to check.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "hearth-e2e", version: "1.0.0" });
await client.connect(transport);
const tools = await client.listTools();
const store = await client.callTool({
  name: "memory_store",
  arguments: {
    namespace: "github/acme/sdk",
    type: "constraint",
    title: "Node SDK client",
    content: "The official MCP TypeScript SDK talks to Hearth over streamable HTTP.",
  },
});
const search = await client.callTool({
  name: "memory_search",
  arguments: { namespace: "github/acme/sdk", query: "which SDK talks to hearth?" },
});
const denied = await client.callTool({ name: "memory_get", arguments: { ids: [] } });
console.log(JSON.stringify({
  server: client.getServerVersion(),
  protocol: transport.protocolVersion ?? null,
  tools: tools.tools.map((t) => ({ name: t.name, annotations: t.annotations })),
  store,
  search,
  denied,
}));
await client.close();
