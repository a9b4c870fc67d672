"""Response types of query engines and synthesizers."""

from ragloom.base.response.schema import (
    RESPONSE_TYPE,
    AsyncStreamingResponse,
    Response,
    StreamingResponse,
)

__all__ = ["Response", "StreamingResponse", "AsyncStreamingResponse", "RESPONSE_TYPE"]
