// The test range server in a child process, so the client under test has its event loop to
// itself. Controlled over IPC: {cmd: "reset"} and {cmd: "counters"}.
import { startServer } from "../test/server.mjs";

const server = await startServer(JSON.parse(process.argv[2]));
process.send({ url: server.url });
process.on("message", async ({ cmd }) => {
  if (cmd === "reset") server.reset();
  if (cmd === "counters") process.send({ counters: { ...server.counters, paths: undefined } });
  if (cmd === "close") {
    await server.close();
    process.exit(0);
  }
});
