"""A LangChain chain whose chat history is a recall conversation (RunnableWithMessageHistory).

Needs: `recall serve` (RECALL_URL, RECALL_API_KEY) and an OpenAI-compatible model server
(OPENAI_BASE_URL: `bash scripts/models.sh start` runs the local one). README: "With Python".
"""

import os

from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_openai import ChatOpenAI

from recall_client import Recall
from recall_client.integrations.langchain import RecallChatMessageHistory

model = ChatOpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ.get("OPENAI_API_KEY", "local"), model=os.environ.get("OPENAI_MODEL", "local"), max_tokens=64, temperature=0)
prompt = ChatPromptTemplate.from_messages([("system", "Answer in one short sentence."), MessagesPlaceholder("history"), ("human", "{question}")])
recall = Recall()
histories: dict[str, RecallChatMessageHistory] = {}
chain = RunnableWithMessageHistory(
    prompt | model,
    lambda session: histories.setdefault(session, RecallChatMessageHistory(client=recall)),
    input_messages_key="question",
    history_messages_key="history",
)
for turn in [
    "My sister Ingrid adopted a retired greyhound called Biscuit.",
    "Unrelated: how do I keep basil alive on a windowsill?",
    "What is my sister's dog called?",
]:
    reply = chain.invoke({"question": turn}, config={"configurable": {"session_id": "demo"}})
    print(f"> {turn}\n{reply.content}\n")
print(f"conversation: {histories['demo'].conversation_id}")
