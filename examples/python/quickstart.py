import asyncio
import os

from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from openai import AsyncOpenAI
from recall_client.integrations.openai_agents import RecallSession

set_tracing_disabled(True)  # the Agents SDK would send traces to OpenAI
llm = AsyncOpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ.get("OPENAI_API_KEY", "local"))
model = OpenAIChatCompletionsModel(model=os.environ.get("OPENAI_MODEL", "local"), openai_client=llm)
agent = Agent(name="assistant", model=model, model_settings=ModelSettings(max_tokens=64, temperature=0))


async def main() -> None:
    session = RecallSession("user_123")  # the recall conversation of that name, made on first use
    await Runner.run(agent, "My sister's dog is called Biscuit.", session=session)
    result = await Runner.run(agent, "What is my sister's dog called?", session=session)
    print(result.final_output)


asyncio.run(main())
