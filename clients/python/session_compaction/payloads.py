"""The Python client's data converter: the SDK's default, plus one rule. A deployment that
encrypts its payloads (PAYLOAD_ENCRYPTION_KEYS, the AES-GCM codec of src/codec) answers in
payloads of encoding ``binary/encrypted``; the SDK's own converter meets them with a bare
``KeyError: Unknown payload encoding``. Here they raise PayloadKeysMissingError instead,
wherever the client reads one (an Update's answer, a query's)."""

from __future__ import annotations

import dataclasses
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.converter import CompositePayloadConverter, DataConverter, DefaultPayloadConverter, EncodingPayloadConverter

from .errors import PayloadKeysMissingError

#: ENCRYPTED_ENCODING of src/codec/aes-gcm-codec.ts, and the metadata key naming the key.
ENCRYPTED_ENCODING = "binary/encrypted"
_KEY_ID = "encryption-key-id"


class _EncryptedPayloads(EncodingPayloadConverter):
    """Reads no encrypted payload: says why. Writes none (the next converter does)."""

    @property
    def encoding(self) -> str:
        return ENCRYPTED_ENCODING

    def to_payload(self, value: Any) -> Payload | None:
        return None

    def from_payload(self, payload: Payload, type_hint: type | None = None) -> Any:
        key_id = payload.metadata.get(_KEY_ID)
        raise PayloadKeysMissingError(key_id.decode("utf-8", "replace") if key_id else None)


class _PayloadConverter(CompositePayloadConverter):
    def __init__(self) -> None:
        super().__init__(*DefaultPayloadConverter.default_encoding_payload_converters, _EncryptedPayloads())


#: What the client's Temporal connections use (``data_converter=`` of ``Client.connect``).
DATA_CONVERTER = dataclasses.replace(DataConverter.default, payload_converter_class=_PayloadConverter)
