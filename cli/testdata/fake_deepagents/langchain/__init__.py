"""A stand-in for the parts of LangChain the import reads (langchain 1.x layout), with our own placeholder text."""
