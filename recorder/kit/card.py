"""The code-reviewer's agent cards: the public one and the extended one (bearer token).

Both are built from the public base URL, e.g. `http://localhost:41242`; the interfaces are
`{base}/a2a/jsonrpc` (JSONRPC) and `{base}/a2a/rest` (HTTP+JSON), each with protocolVersion
"1.0" (without it the SDK merges v0.3 legacy fields into the served card). A kit that serves
gRPC adds its `GRPC` interface (`grpc_interface`: `127.0.0.1:PORT`) once its port is bound.
"""

from __future__ import annotations

from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

from recorder.bindings import grpc as grpc_binding
from recorder.bindings import jsonrpc, rest
from recorder.kit.review import LANGUAGES, SLOW_MARKER

__all__ = [
    "AGENT_NAME",
    "AGENT_VERSION",
    "BEARER_SCHEME",
    "JSONRPC_PATH",
    "REST_PATH",
    "build_extended_card",
    "build_public_card",
    "grpc_interface",
]

AGENT_NAME = "code-reviewer"
AGENT_VERSION = "1.0.0"
JSONRPC_PATH = "/a2a/jsonrpc"
REST_PATH = "/a2a/rest"
BEARER_SCHEME = "bearer"
_PROTOCOL_VERSION = "1.0"


def _security_schemes() -> dict[str, SecurityScheme]:
    return {
        BEARER_SCHEME: SecurityScheme(
            http_auth_security_scheme=HTTPAuthSecurityScheme(
                scheme="Bearer",
                description=(
                    "Needed for GetExtendedAgentCard only: Authorization: Bearer <token>. "
                    "The kit's token is set with `recorder kit --token` or RECORDER_KIT_TOKEN."
                ),
            )
        )
    }


def _skills() -> list[AgentSkill]:
    return [
        AgentSkill(
            id="languages",
            name="Supported languages",
            description="Answers questions about the programming languages it can review.",
            tags=["languages", "question"],
            examples=["What languages can you review?"],
            input_modes=["text/plain"],
            output_modes=["text/plain"],
        ),
        AgentSkill(
            id="review-diff",
            name="Review a unified diff",
            description=(
                "Reviews the added lines of a unified diff sent as text and returns the review "
                "comments as an artifact named 'review'. Languages: "
                f"{', '.join(LANGUAGES)}. A diff without a file name header gets asked for "
                f'the file name; the marker "{SLOW_MARKER}" keeps the review in progress '
                "until it is canceled."
            ),
            tags=["code-review", "diff"],
            examples=[
                "--- a/src/app.py\n+++ b/src/app.py\n@@ -1,1 +1,2 @@\n import os\n+# TODO: x\n"
            ],
            input_modes=["text/plain"],
            output_modes=["text/plain"],
        ),
    ]


def build_public_card(base_url: str) -> AgentCard:
    """The card served at /.well-known/agent-card.json for an agent reachable at base_url."""
    base = base_url.rstrip("/")
    return AgentCard(
        name=AGENT_NAME,
        description=(
            "A deterministic reference code reviewer: answers questions about the languages "
            "it reviews and reviews unified diffs with fixed rules (TODOs, long lines, debug "
            "prints, trailing whitespace, hard-coded secrets, missing tests)."
        ),
        version=AGENT_VERSION,
        provider=AgentProvider(organization="recorder kit", url=base),
        supported_interfaces=[
            AgentInterface(
                url=f"{base}{JSONRPC_PATH}",
                protocol_binding=jsonrpc.BINDING,
                protocol_version=_PROTOCOL_VERSION,
            ),
            AgentInterface(
                url=f"{base}{REST_PATH}",
                protocol_binding=rest.BINDING,
                protocol_version=_PROTOCOL_VERSION,
            ),
        ],
        capabilities=AgentCapabilities(
            streaming=True, push_notifications=True, extended_agent_card=True
        ),
        security_schemes=_security_schemes(),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=_skills(),
    )


def grpc_interface(address: str) -> AgentInterface:
    """The card's gRPC interface for the kit's gRPC server at `address` (`127.0.0.1:PORT`:
    host and port, as a gRPC channel dials it; no scheme, no path)."""
    return AgentInterface(
        url=address, protocol_binding=grpc_binding.BINDING, protocol_version=_PROTOCOL_VERSION
    )


def build_extended_card(base_url: str) -> AgentCard:
    """The card GetExtendedAgentCard returns to a caller with the bearer token.

    It adds the `review-rules` skill, marked with the bearer security requirement
    (`skills[].securityRequirements`): the skill is listed only for token holders. The kit
    checks the token on GetExtendedAgentCard only; every other operation is open.
    """
    card = build_public_card(base_url)
    card.description += " This extended card also lists the review rules skill."
    card.skills.append(
        AgentSkill(
            id="review-rules",
            name="Explain the review rules",
            description="Lists the rules the reviewer applies to a diff, with their ids.",
            tags=["rules", "question"],
            examples=["Which rules do you check?"],
            input_modes=["text/plain"],
            output_modes=["text/plain"],
            security_requirements=[
                SecurityRequirement(schemes={BEARER_SCHEME: StringList(list=[])})
            ],
        )
    )
    return card
