"""An identifier in a value's place is the fact's value, not what the fact is about (issue 25:
zero superseded values presented as current).

"orders-api primary database: pg-main-3" is about orders-api; pg-main-3 is what it says of it. Read
as a second subject, the identifier kept a later "orders-api primary database: pg-replica-9" from
linking to the line it replaces (two subject sets, two keys), and the old database stayed in the
ledger as current beside the new one. The colon does not always introduce a value, though: after a
label ("Blocked: T-14", "Next up: MIG-7") or a bare name ("orders-api: moved to the new cluster"),
the identifier after it is still the subject, and two such lines stay two facts.
"""

from __future__ import annotations

from typing import Literal

from longrun.context import FactStore, facts, ledger, recall
from longrun.models import Message, TextBlock


def _current(*texts: str, source: Literal["user", "assistant"] = "user") -> list[str]:
    messages = [Message(role=source, content=[TextBlock(text=t)]) for t in texts]
    return [e.unit.text for e in ledger.fold([], ledger.units_of(messages, {}))]


VALUE_AFTER_SEPARATOR = (
    # (earlier, later): the later line restates the same attribute of the same subject, no cue word
    ("orders-api primary database: pg-main-3 (tentative)", "orders-api primary database: pg-replica-9"),
    ("Primary database for orders-api: pg-main-3", "Primary database for orders-api: pg-replica-9"),
    ("Reviewer for T-14: dana-k", "Reviewer for T-14: eli-m"),
    ("payments-gw on-call: ops_lee", "payments-gw on-call: ops_kim"),
    ("* ingest-worker base image: img-py311-slim", "* ingest-worker base image: img-py312-slim"),
    ("DEFAULT_REGION=eu-west-2", "DEFAULT_REGION=us-east-1"),
    ("The release branch of mobile-app is rel-4-2.", "The release branch of mobile-app is rel-4-3."),
    ('{"service": "orders-api", "primary_db": "pg-main-3"}', '{"service": "orders-api", "primary_db": "pg-replica-9"}'),
)


def test_a_new_name_corrects_the_identifier_that_was_the_value() -> None:
    old, new = "The release codename for search-api is HERON-12.", "the search-api release codename changed to KITE-40"
    assert _current(old, new) == [new]
    assert _current(old, "the billing-api release codename changed to KITE-40") == [
        old, "the billing-api release codename changed to KITE-40"], "another subject's name corrects nothing here"


def test_a_chain_across_structures_leaves_only_the_last_value_current() -> None:
    chain = ("search-api index alias: idx-2024-a (provisional)",
             '{"service": "search-api", "index_alias": "idx-2024-b", "previous": "idx-2024-a"}',
             "search-api index alias: idx-2024-c")
    assert _current(*chain) == [chain[-1]]
    assert _current('{"service": "orders-api", "primary_db": "pg-main-3"}',
                    '{"service": "billing-api", "primary_db": "pg-main-4"}') == [
        '{"service": "orders-api", "primary_db": "pg-main-3"}', '{"service": "billing-api", "primary_db": "pg-main-4"}'], \
        "a record's first field names it: two services, two facts"


def test_an_identifier_in_the_value_place_is_the_value_and_a_restatement_replaces_it() -> None:
    for earlier, later in VALUE_AFTER_SEPARATOR:
        assert _current(earlier, later) == [later], (earlier, later)
        assert _current(earlier, later, source="assistant") == [later], ("the agent's lines", earlier, later)


def test_the_subject_and_the_value_of_a_line_whose_colon_introduces_a_value() -> None:
    u = facts.analyse("orders-api primary database: pg-main-3 (tentative)", "user")
    assert facts.subjects(u) == {"orders-api"}
    assert "pg-main-3" in facts.held_values(u)
    u = facts.analyse("ORDERS_API_REPLICA=pg-replica-9", "user")
    assert facts.subjects(u) == {"orders_api_replica"} and facts.held_values(u) == {"pg-replica-9"}
    u = facts.analyse("| T-14 | reviewer | dana-k |", "user")
    assert facts.subjects(u) == {"t-14"} and facts.held_values(u) == {"dana-k"}


def test_after_a_label_or_a_bare_name_the_identifier_is_still_the_subject_and_other_attributes_stay() -> None:
    for pair in (("Blocked: T-14", "Blocked: T-15"),
                 ("Next up: MIG-7", "Next up: MIG-8"),
                 ("Done: MIG-8155", "Done: MIG-8156"),
                 ("orders-api: moved to pg-main-3", "orders-api: talks to cache-7"),
                 ("Owner of T-14: dana-k", "Owner of T-15: dana-k"),
                 ("Primary database for orders-api: pg-main-3", "Primary database for billing-api: pg-main-4"),
                 ("FACT: billing-svc", "FACT: auth-svc"),
                 # a bare identifier says nothing of what it is: a synonym (region ~ cluster) is not the same attribute
                 ("| orders-api | cluster | k8s-blue-3 |", "orders-api region: eu-west-2"),
                 ("orders-api cluster: k8s-blue-3", "The region of orders-api is eu-west-2."),
                 ("The region of orders-api is eu-west-2.", "deploy/orders.txt:12: cluster for orders-api: k8s-blue-3")):
        assert _current(*pair) == list(pair), pair
    blocked = facts.analyse("Blocked: T-14", "user")
    assert facts.subjects(blocked) == {"t-14"} and not facts.held_values(blocked)


def test_the_store_marks_the_old_identifier_superseded_and_recall_says_so() -> None:
    store = FactStore()
    for t in ("Primary database for orders-api: pg-main-3", "unrelated chatter about lunch",
              "Primary database for orders-api: pg-replica-9"):
        store.extend([(u, len(store.rows) + 1) for u in ledger.units_of([Message.user_text(t)], {})])
    assert [e.unit.text for e in store.entries()] == ["Primary database for orders-api: pg-replica-9"]
    answer = recall(store, "orders-api database")
    assert [r.text for r in answer.current] == ["Primary database for orders-api: pg-replica-9"]
    assert [r.text for r in answer.superseded] == ["Primary database for orders-api: pg-main-3"]


def test_a_qualified_attribute_holds_its_value_and_a_change_to_a_new_one_replaces_it() -> None:
    # "Our primary region is us-east-1" says the primary region's value; before, us-east-1 was read
    # as the line's subject, so "Primary region changed to eu-west-1" had another subject and both
    # stayed current
    for earlier, later in (("Our primary region is us-east-1.", "Primary region changed to eu-west-1."),
                           ("The staging cluster is k8s-east-3.", "The staging cluster was moved to k8s-west-1."),
                           ("The default build tag is rc-41.", "The default build tag has been bumped to rc-42.")):
        assert _current(earlier, later) == [later], (earlier, later)
    u = facts.analyse("Our primary region is us-east-1.", "user")
    assert not facts.subjects(u) and facts.held_values(u) == {"us-east-1"}
    u = facts.analyse("Primary region changed to eu-west-1.", "user")
    assert not facts.subjects(u) and facts.held_values(u) == {"eu-west-1"}


def test_another_qualifier_or_a_name_before_the_change_keeps_both_lines() -> None:
    for pair in (("Our primary region is us-east-1.", "Our backup region is eu-west-1."),
                 ("The staging cluster is k8s-east-3.", "Prod cluster changed to k8s-west-1."),
                 ("Primary region is us-east-1.", "Traffic moved to eu-west-1 for the drill."),
                 ("checkout-web routes to pay-v1", "search-web switched to pay-v2")):
        assert _current(*pair) == list(pair), pair
    # after a name, "switched to" states a relation between two names, not a value of the first
    u = facts.analyse("search-web switched to pay-v2", "user")
    assert facts.subjects(u) == {"search-web", "pay-v2"} and not facts.held_values(u)


SETTING_CHANGED = (
    # (earlier, later): a log level or a switch set again, said as an instruction, a record or prose
    ("Set LOG_LEVEL to INFO.", "Change LOG_LEVEL to DEBUG."),
    ("Log level: INFO", "Switch the log level to DEBUG."),
    ("The log level is INFO in staging.", "Staging log level is DEBUG now."),
    ("Feature flag new_checkout is on.", "Turn new_checkout off."),
    ("new_checkout: enabled", "new_checkout: disabled"),
    ("Disable caching for the API.", "Enable caching for the API."),
)
SETTINGS_APART = (
    # (earlier, later): two settings, or a switch word that is prose; both stay current
    ("Set LOG_LEVEL to INFO.", "Set METRICS_LEVEL to DEBUG."),
    ("Staging log level is INFO.", "Prod log level is WARN."),
    ("Feature flag new_checkout is on.", "Feature flag dark_mode is off."),
    ("Turn new_checkout off.", "Turn dark_mode on."),
    ("Disable caching for the API.", "Enable compression for the API."),
    ("Feature flag new_checkout is on.", "Alice is on call for new_checkout this week."),
    ("Switch checkout-web to pay-v2.", "Switch search-web to pay-v3."),
    ("Set the theme to dark.", "Set the font to mono."),
)


def test_a_setting_set_again_replaces_its_earlier_value() -> None:
    for earlier, later in SETTING_CHANGED:
        assert _current(earlier, later) == [later], (earlier, later)
    assert facts.analyse("Set LOG_LEVEL to INFO.", "user").values == {"INFO"}
    assert facts.analyse("We renamed the default branch to main.", "user").values == {"main"}


def test_two_settings_and_prose_switch_words_stay_apart() -> None:
    for earlier, later in SETTINGS_APART:
        assert _current(earlier, later) == [earlier, later], (earlier, later)
    assert facts.analyse("Alice is on call this week.", "user").values == set(), "'on' in prose is no value"
    assert facts.analyse("# Enable tracing for the API", "tool").values == set(), "a code comment sets nothing"
    assert "pay-v2" in facts.analyse("Switch checkout-web to pay-v2.", "user").names, "a relation's end stays a name"
