"""The wire formats agent logs are read in: one module each, registered here in the order
`FORMATS` lists them. The contract a format meets is `base.LogFormat`'s; adding a format is
adding its module and its line below."""

from workbench.closure.logs.formats import anthropic, langchain, openai, responses
from workbench.closure.logs.formats.base import REGISTRY, LogFormat, by_precedence, get, register

register(openai.FORMAT)
register(anthropic.FORMAT)
register(langchain.FORMAT)
register(responses.FORMAT)

FORMATS = tuple(REGISTRY)  # the formats the project ships

__all__ = ["FORMATS", "LogFormat", "by_precedence", "get", "register"]
