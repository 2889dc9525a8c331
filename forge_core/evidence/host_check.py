"""A host check: one short real call that shows a host answers, with its tokens and latency.

It sits with the evidence, not the hosts, because it asks the way every answer is asked
(`answer_with_arm` on the Direct arm), and hosts sit below evidence in the package's layers.
"""

from __future__ import annotations

import asyncio

from forge_core.arms import Arm
from forge_core.evidence.answering import ArmAnswer, Evidence, answer_with_arm
from forge_core.hosts.base import HostConfig
from forge_core.hosts.lifetime import hosted

CHECK_QUESTION = "What is the capital of France?"
DIRECT_ARM = Arm("direct", "no_think")


def check_host(config: HostConfig) -> ArmAnswer:
    """`CHECK_QUESTION` on the Direct arm, from synchronous code, on the host `config` (served
    first when it needs an embedded server)."""

    async def run() -> ArmAnswer:
        async with hosted(config) as client:
            return await answer_with_arm(client, Evidence(CHECK_QUESTION, ()), DIRECT_ARM, False)

    return asyncio.run(run())
