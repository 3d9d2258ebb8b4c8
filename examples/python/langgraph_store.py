"""A LangGraph graph with long-term memory in recall: facts stored in one thread, found by
recall's ranking in another.

Needs: `recall serve` (RECALL_URL, RECALL_API_KEY) and an OpenAI-compatible model server
(OPENAI_BASE_URL: `bash scripts/models.sh start` runs the local one). README: "With Python".
"""

import os
import uuid

from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.store.base import BaseStore

from recall_client.integrations.langgraph import RecallStore

model = ChatOpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ.get("OPENAI_API_KEY", "local"), model=os.environ.get("OPENAI_MODEL", "local"), max_tokens=64, temperature=0)
user = ("memories", "user-" + uuid.uuid4().hex[:8])


def chat(state: MessagesState, *, store: BaseStore) -> dict:
    said = state["messages"][-1].content
    if said.lower().startswith("remember"):
        store.put(user, uuid.uuid4().hex, {"text": said})
    notes = "\n".join(f"- {m.value['text']}" for m in store.search(user, query=said, limit=3))
    system = {"role": "system", "content": f"Answer in one short sentence. Notes about the user:\n{notes}"}
    return {"messages": [model.invoke([system, state["messages"][-1]])]}


app = StateGraph(MessagesState).add_node(chat).add_edge(START, "chat").compile(store=RecallStore())
for thread, turn in enumerate(["Remember: my sister's greyhound is called Biscuit.", "How do I keep basil alive?", "What is my sister's dog called?"]):
    out = app.invoke({"messages": [{"role": "user", "content": turn}]}, {"configurable": {"thread_id": str(thread)}})
    print(f"> {turn}\n{out['messages'][-1].content}\n")
