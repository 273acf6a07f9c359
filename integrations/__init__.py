"""Where agents live: asides plugged into the agent frameworks hosts already use.

* :mod:`asides.integrations.openai_agents`: :class:`~asides.integrations.openai_agents.AsidesSession`,
  a session for the OpenAI Agents SDK (``pip install 'asides[openai-agents]'``).

Each integration imports its framework only when it is imported itself, so ``import asides``
never needs one.
"""
