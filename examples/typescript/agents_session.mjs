// An OpenAI Agents SDK (TypeScript) agent whose memory is a recall conversation.
// Needs: `recall serve` (RECALL_URL, RECALL_API_KEY) and an OpenAI-compatible model server
// (OPENAI_BASE_URL: `bash scripts/models.sh start` runs the local one). README: "With TypeScript".
import { Agent, OpenAIChatCompletionsModel, run, setTracingDisabled } from "@openai/agents";
import OpenAI from "openai";
import { RecallSession } from "recall-client/agents";

setTracingDisabled(true);
const llm = new OpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY ?? "local" });
const agent = new Agent({
  name: "assistant",
  instructions: "Answer in one short sentence.",
  model: new OpenAIChatCompletionsModel(llm, process.env.OPENAI_MODEL ?? "local"),
  modelSettings: { maxTokens: 64, temperature: 0 },
});

const session = new RecallSession(); // a new recall conversation; { sessionId } continues one
for (const turn of [
  "My sister Ingrid adopted a retired greyhound called Biscuit.",
  "Unrelated: how do I keep basil alive on a windowsill?",
  "What is my sister's dog called?",
]) {
  const result = await run(agent, turn, { session });
  console.log(`> ${turn}\n${result.finalOutput}\n`);
}
console.log(`conversation: ${session.sessionId}`);
