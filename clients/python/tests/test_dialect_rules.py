"""The real-user rule of every dialect against the shared vectors (contract/vectors/dialect-rules.json),
which the TypeScript dialects are tested against too (test/unit/dialect-vectors.test.ts)."""

from __future__ import annotations

import pytest

from session_compaction.dialects import is_real_user_request

from .conftest import vectors

CASES = vectors("dialect-rules.json")["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_real_user_requests(case: dict) -> None:
    found = [i for i, m in enumerate(case["messages"]) if is_real_user_request(m, case["dialect"])]
    assert found == case["realUserRequests"]
