"""asides's store: content blocks with audiences, messages, the store over its journals (SQLite, PostgreSQL), views.

Exports what the specification's section 3 puts here: the content blocks and their
constructors, the JSON codec of content, ``Message``, ``content_for_reader`` and the store's
errors. The other names it exported before still import from here, with an
``AsidesDeprecationWarning`` naming their one public home (docs/api.md, "Deprecated names"):
they are the names imported ``as`` themselves, which ``moved`` takes out of this namespace again
(type checkers still see them).
"""

from .._deprecate import deprecate_attributes, moved
from ._blocks import Audience as Audience
from ._blocks import (
    ContentBlock,
    ImageBlock,
    RedactedThinkingBlock,
    SystemChangeBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    block_from_json,
    block_to_json,
    content_for_reader,
    content_from_json,
    content_to_json,
    text,
    thinking,
    tool_result,
    tool_use,
)
from ._blocks import UnreadableBlock as UnreadableBlock
from ._blocks import check_content as check_content
from ._blocks import coerce_content as coerce_content
from ._blocks import has_audience as has_audience
from ._blocks import image as image
from ._blocks import redacted_thinking as redacted_thinking
from ._blocks import system_change as system_change
from ._errors import (
    ArgumentTypeError,
    AsidesError,
    BranchExistsError,
    InvalidArgumentError,
    InvalidNameError,
    MalformedContentError,
    NameTypeError,
    StoreCorruptError,
    StoreFailedError,
    StoreLockedError,
    StoreNotEmptyError,
    StoreReadOnlyError,
    UnknownBranchError,
    UnknownMessageError,
)
from ._messages import Message
from ._model import BranchInfo as BranchInfo
from ._open import open_store as open_store
from ._sqlite import SqliteStore as SqliteStore
from ._store import Store as Store
from ._views import MessageView as MessageView
from ._views import ViewFilter as ViewFilter
from ._views import reader_body as reader_body
from ._views import reader_view as reader_view

__all__ = [
    "ArgumentTypeError",
    "InvalidArgumentError",
    "InvalidNameError",
    "NameTypeError",
    "BranchExistsError",
    "ContentBlock",
    "ImageBlock",
    "MalformedContentError",
    "Message",
    "RedactedThinkingBlock",
    "StoreCorruptError",
    "StoreFailedError",
    "StoreLockedError",
    "StoreNotEmptyError",
    "StoreReadOnlyError",
    "SystemChangeBlock",
    "TextBlock",
    "ThinkingBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "AsidesError",
    "UnknownBranchError",
    "UnknownMessageError",
    "block_from_json",
    "block_to_json",
    "content_for_reader",
    "content_from_json",
    "content_to_json",
    "text",
    "thinking",
    "tool_result",
    "tool_use",
]

deprecate_attributes(
    __name__,
    {
        **moved(globals(), "asides", "0.2.0", ["Audience", "BranchInfo", "ViewFilter", "image", "redacted_thinking", "system_change"]),
        **moved(
            globals(),
            "asides.lowlevel",
            "0.2.0",
            [
                "MessageView",
                "SqliteStore",
                "Store",
                "UnreadableBlock",
                "check_content",
                "coerce_content",
                "has_audience",
                "open_store",
                "reader_body",
                "reader_view",
            ],
        ),
    },
)
