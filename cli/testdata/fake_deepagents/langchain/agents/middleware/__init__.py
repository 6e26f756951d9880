from langchain.agents.middleware.todo import TodoListMiddleware

__all__ = ["TodoListMiddleware"]
