"""An OpenAI Agents SDK agent whose memory is a recall conversation.

Needs: `recall serve` (RECALL_URL, RECALL_API_KEY) and an OpenAI-compatible model server
(OPENAI_BASE_URL: `bash scripts/models.sh start` runs the local one). README: "With Python".
"""

import asyncio
import os

from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from openai import AsyncOpenAI

from recall_client.integrations.openai_agents import RecallSession

set_tracing_disabled(True)
llm = AsyncOpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ.get("OPENAI_API_KEY", "local"))
model = OpenAIChatCompletionsModel(model=os.environ.get("OPENAI_MODEL", "local"), openai_client=llm)
agent = Agent(name="assistant", instructions="Answer in one short sentence.", model=model, model_settings=ModelSettings(max_tokens=64, temperature=0))


async def main() -> None:
    session = RecallSession()  # a new recall conversation; RecallSession(ID) continues one
    for turn in [
        "My sister Ingrid adopted a retired greyhound called Biscuit.",
        "Unrelated: how do I keep basil alive on a windowsill?",
        "What is my sister's dog called?",
    ]:
        result = await Runner.run(agent, turn, session=session)
        print(f"> {turn}\n{result.final_output}\n")
    print(f"conversation: {session.session_id}")


asyncio.run(main())
