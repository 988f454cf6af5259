"""Atomic facts (issue 25, causes 1 and 7): a line that states many facts becomes one store row
per fact, each superseded on its own, none cut off with "…"."""

from __future__ import annotations

from longrun.context import facts, ledger
from longrun.context.factstore import FactStore
from longrun.models import Message

PAIRS = [f"SVC_{i:02d}_PORT={8000 + i}" for i in range(60)]


def _rows(store: FactStore, *texts: str) -> None:
    for t in texts:
        units = ledger.units_of([Message.user_text(t)], {})
        store.extend([(u, len(store.rows) + 1) for u in units])


def test_a_sixty_pair_line_is_sixty_rows_and_a_later_value_supersedes_only_its_pair() -> None:
    store = FactStore()
    _rows(store, "Authoritative records: " + "; ".join(PAIRS) + ".")
    assert sorted(r.text for r in store.current()) == sorted(PAIRS), "every pair a row of its own, the tail too"
    assert not any("…" in r.text for r in store.rows)
    _rows(store, "SVC_37_PORT=9999")
    current = {r.text for r in store.current()}
    assert "SVC_37_PORT=9999" in current and "SVC_37_PORT=8037" not in current
    assert current == (set(PAIRS) - {"SVC_37_PORT=8037"}) | {"SVC_37_PORT=9999"}, "only that pair is superseded"
    new = next(r for r in store.rows if r.text == "SVC_37_PORT=9999")
    assert [store.rows[s - 1].text for s in new.supersedes] == ["SVC_37_PORT=8037"]


def test_routing_edges_and_key_colon_value_lines_split_under_their_header() -> None:
    assert facts.split_units("ROUTING TABLE\napi-gw -> billing-svc, billing-svc -> ledger-db") == [
        "ROUTING TABLE", "api-gw -> billing-svc", "billing-svc -> ledger-db"]
    assert facts.split_units("billing-svc config: port: 8443, timeout: 30s, retries: 3") == [
        "billing-svc: port: 8443", "billing-svc: timeout: 30s", "billing-svc: retries: 3"], "a naming header scopes them"
    assert facts.split_units("HARD CONSTRAINT: MAX_SPEND=500; MAX_HEADCOUNT=3") == [
        "HARD CONSTRAINT: MAX_SPEND=500", "HARD CONSTRAINT: MAX_HEADCOUNT=3"], "a typing header keeps their kind"
    assert all(facts.analyse(t, "user").kind == "rule" for t in facts.split_units("HARD CONSTRAINT: MAX_SPEND=500; MAX_HEADCOUNT=3"))


def test_prose_with_commas_colons_or_semicolons_stays_whole() -> None:
    for line in ("We use Python: fast, simple, and clean.", "Note: the port is 8443; the host is x.",
                 "Owner: alice, who also runs the billing on-call."):
        assert facts.split_units(line, prose=False) == [line], line


def test_two_services_same_key_under_their_own_headers_stay_distinct() -> None:
    store = FactStore()
    _rows(store, "billing-svc: port=8443; timeout=30s", "auth-svc: port=9443; timeout=45s")
    assert len(store.current()) == 4, [r.text for r in store.current()]


def _current(*texts: str) -> list[str]:
    return [e.unit.text for e in ledger.fold([], ledger.units_of([Message.user_text(t) for t in texts], {}))]


def test_a_reworded_rename_or_move_supersedes_the_old_value() -> None:
    assert _current("FACT: The project codename is DNSNU-172.", "We are calling the project RIECI-121 now.") == [
        "We are calling the project RIECI-121 now."]
    assert _current("The deadline is Thursday.", "We moved the deadline to Friday.") == ["We moved the deadline to Friday."]
    assert _current("FACT: Launch deadline is 2027-03-04.", "Update: the launch date moved to 03-12 (March 12).") == [
        "Update: the launch date moved to 03-12 (March 12)."]


def test_a_rewording_about_another_subject_supersedes_nothing() -> None:
    for pair in (("HARD CONSTRAINT: Project spending ceiling is $500.", "HARD CONSTRAINT: Conference spending ceiling is $350."),
                 ("The deadline is Thursday.", "The demo is Friday."),
                 ("T-14 is blocked on review.", "T-15 is blocked on review."),
                 ("The billing-svc codename is ABC-1.", "We are calling the auth-svc XYZ-2 now."),
                 ("The project codename is DNSNU-172.", "The project deadline is Friday.")):
        assert _current(*pair) == list(pair), pair


def test_an_env_line_a_spaced_key_and_an_attribute_header_split_into_pairs_that_supersede_alone() -> None:
    assert facts.split_units("ORDERS_API_PORT=8080 BILLING_PORT=9000") == ["ORDERS_API_PORT=8080", "BILLING_PORT=9000"]
    assert facts.split_units("Config: orders-api timeout=30s; billing-svc timeout=45s") == [
        "orders-api timeout=30s", "billing-svc timeout=45s"], "a header that says where pairs come from is not repeated"
    store = FactStore()
    _rows(store, "ORDERS_API_PORT=8080 BILLING_PORT=9000", "Config: orders-api timeout=30s; billing-svc timeout=45s",
          "orders-api port: 8080", "ORDERS_API_PORT=8443", "orders-api timeout is now 60s",
          "Updated ports: orders-api=8443, billing-svc=9090")
    assert sorted(r.text for r in store.current()) == sorted([
        "BILLING_PORT=9000", "billing-svc timeout=45s", "ORDERS_API_PORT=8443", "orders-api timeout is now 60s",
        "ports: orders-api=8443", "ports: billing-svc=9090"]), "each pair replaced alone; the header's 'ports' kept on each"


def test_a_sentence_with_an_equals_sign_or_spaces_stays_whole() -> None:
    for line in ("We set the pool size = 8 after the incident", "x=1 and y=2 worked best"):
        assert facts.split_units(line, prose=False) == [line], line


def test_a_nested_yaml_key_keeps_the_name_it_is_nested_under() -> None:
    text = "```yaml\nsearch-api72:\n  replicas: 17\nauth-api88:\n  replicas: 19\n```"
    assert "auth-api88: replicas: 19" in facts.split_units(text)
    store = FactStore()
    _rows(store, text, "search-api72 replicas: 20 now")
    current = [r.text for r in store.current()]
    assert "auth-api88: replicas: 19" in current, "another service's replicas are not replaced"
    assert "search-api72 replicas: 20 now" in current and "search-api72: replicas: 17" not in current
    # a line that is not indented under it, or is not one key and value, is not nested
    assert facts.split_units("billing-svc:\nport: 8443\n  we checked it twice") == [
        "billing-svc:", "port: 8443", "we checked it twice"]
