"""Supersession across rewording, re-pointing and overriding (issue 25: "0 rejected plans or
superseded values presented as current").

Each case is a line and a later one that replaces it in another structure; the store must keep
only the later one current (the earlier stays in the store, superseded, for `recall`). The
negative cases are lines that look alike and must both stay current: a false supersession loses a
fact, which is worse than a missed one.
"""

from __future__ import annotations

import pytest

from longrun.context import facts
from longrun.context.factstore import FactStore


def _current(*said: str | tuple[str, str]) -> list[str]:
    """The current rows after folding `said` in order (a text, or (source, text))."""
    store = FactStore()
    pairs = [(s if isinstance(s, tuple) else ("user", s)) for s in said]
    store.extend([(facts.analyse(unit, source), i + 1) for i, (source, text) in enumerate(pairs)
                  for unit in facts.split_units(text)])
    return [r.text for r in store.current()]


def _text(said: str | tuple[str, str]) -> str:
    return said if isinstance(said, str) else said[1]


@pytest.mark.parametrize(("old", "new"), [
    # a rename that names both the subject and its new name
    (("agent", "| orders-api | codename | KESTREL-12 |"), "We are calling orders-api HERON-7 now."),
    ("orders-api codename: KESTREL-12", "From here on orders-api is known as HERON-7."),
    ("The codename for orders-api is KESTREL-12.", "orders-api goes by HERON-7 now, we renamed it."),
    # a relation re-pointed, naming the old end as a name or as a value
    (("agent", "the LB sends checkout-web requests to pay-v1"), "checkout-web routes to pay-v2 instead of pay-v1"),
    (("agent", "checkout-web is scheduled on k8s-east-3"), "re-pointed checkout-web from k8s-east-3 to k8s-west-1"),
    (("agent", "checkout-web.datasource = pg-main-2"), "checkout-web reads from pg-main-4 instead of pg-main-2"),
    # a single-valued relation said again in another structure, with another end
    ("checkout-web routes to pay-v1", "| checkout-web | routes to | pay-v2 |"),
    ("pg-main-2 backs checkout-web", "| checkout-web | backed by | pg-main-4 |"),
    # the same relation in other words: a record replaces the prose, a change replaces either
    ("ledger-svc uses pg-main-2 as its primary store", "| ledger-svc | reads from | pg-main-4 |"),
    ("requests for ledger-svc are routed to pay-v1", "ledger-svc now routes to pay-v2"),
    ("ledger-svc reads from pg-main-2", "migration finished: ledger-svc reads from pg-main-4 from now on"),
    ("| ledger-svc | routes to | pay-v1 |", "ledger-svc is now routed to pay-v2"),
    ("pg-main-2 backs ledger-svc", "ledger-svc switched: it now reads from pg-main-4"),
])
def test_a_later_line_in_another_structure_supersedes(old: str | tuple[str, str], new: str) -> None:
    assert _current(old, new) == [new]


@pytest.mark.parametrize("pair", [
    ("checkout-web depends on pay-v1", "| checkout-web | depends on | pay-v2 |"),  # many dependencies
    ("checkout-web depends on pay-v1", "checkout-web depends on ledger-v3"),
    ("checkout-web routes to pay-v1", "checkout-web routes to ledger-v3"),  # prose may add a route
    ("checkout-web routes to pay-v1", "search-web routes to pay-v1"),  # two services, one target
    ("billing-svc runs in eu-west-1", "traffic from eu-west-1 to us-east-2 is slow today"),
    ("The codename for orders-api is KESTREL-12.", "We are calling payments-api HERON-7 now."),
    ("auth-svc calls billing-svc", "billing-svc codename: HERON-7"),
    ("checkout-web routes to pay-v1", "search-web routes to pay-v2 instead of pay-v0"),  # another old end
    ("checkout-web routes to pay-v1", "checkout-web now also routes to ledger-v3"),  # a change that adds
    ("checkout-web runs in eu-west-1", "checkout-web is now scheduled on k8s-east-3"),  # two relations
    ("staging traffic for checkout-web is routed to pay-v1", "prod traffic for checkout-web now routes to pay-v2"),
    ("checkout-web uses pg-main-2 as a cache", "checkout-web now reads from pg-main-4"),  # many-valued "uses"
    ("prod: checkout-web routes to pay-v1", "staging: checkout-web now routes to pay-v2"),  # a label that qualifies
    # a correction of one thing's field corrects no other thing's field of that name
    ("Set search-api.schema_md5=dd46304a6709a4bf", ("agent", "ledger-svc schema_md5: 0a1b2c3d4e5f -> 9f8e7d6c5b4a (final)")),
])
def test_look_alikes_about_other_things_both_stay(pair: tuple[str | tuple[str, str], ...]) -> None:
    assert _current(*pair) == [_text(p) for p in pair]


@pytest.mark.parametrize(("old", "new"), [
    ("Plan: move the session store to Redis Cluster.", "We are not doing Redis Cluster; keep sessions in Postgres."),
    ("Decision: billing-export ships as nightly CSV files.", "Reverting the CSV decision for billing-export: stream to Kafka."),
    (("agent", "I'll go with blue-green deploys for orders-api."), "Scratch blue-green for orders-api, use a canary."),
    ("We chose SQS for the orders-api queue.", "orders-api queue: SQS was dropped, NATS replaces it."),
    (("agent", "Going with Redis for the orders-api cache for now."),
     "We tried Redis on orders-api and it did not scale; Varnish it is."),  # one unit, not two sentences
])
def test_an_overridden_plan_is_not_current(old: str | tuple[str, str], new: str) -> None:
    assert _current(old, new) == [new]


def test_an_override_replaces_every_line_of_the_choice_it_overrides() -> None:
    said = ["Options for the orders-api cache: Redis, Varnish; leaning to Redis.", ("agent", "Agreed, orders-api gets Redis."),
            "Change of plan for orders-api: drop Redis, use Varnish."]
    assert _current(*said) == [said[-1]]


@pytest.mark.parametrize("pair", [
    ("Plan for orders-api: use Redis as the cache.", "No, we are not doing Redis for search-api; use memcached."),
    ("We picked Kafka for the orders-api queue.", "Drop the orders-api staging database after the test."),
    ("Never deploy orders-api on Fridays.", "We dropped the Friday deploy for orders-api; Monday instead."),
    ("Decision: orders-api API style = gRPC.", "| search-api | API style | REST | rejected |"),
])
def test_an_override_of_another_thing_replaces_nothing(pair: tuple[str, str]) -> None:
    assert _current(*pair) == list(pair)


def test_a_correction_of_one_things_route_keeps_the_route_that_ends_there() -> None:
    """"B routes to D instead of C" corrects B's route; "A routes to B" shares the name B as its
    end, not as its subject, and stays current (it was dropped as a second match)."""
    said = [("agent", "pay-v1 routes to ledger-v2"), "checkout-web now routes to pay-v1",
            "pay-v1 routes to ledger-v3 instead of ledger-v2"]
    assert _current(*said) == said[1:]


def test_a_correction_of_one_things_store_keeps_the_store_line_that_names_it_inside_its_cue() -> None:
    """The same, said with "uses B as its primary store", whose end stands inside the cue: the
    correction of pg-main-2's own store must not drop checkout-web's line (it did: the line was
    not read as a relation of checkout-web, so the guard did not see it)."""
    said = [("agent", "pg-main-2 uses disk-a as its primary store"), "checkout-web now uses pg-main-2 as its primary store",
            "pg-main-2 uses disk-b as its primary store instead of disk-a"]
    assert _current(*said) == said[1:]


@pytest.mark.parametrize(("old", "new"), [
    ("JIRA-4412 status: In Progress", "JIRA-4412 moved to Done"),
    ("JIRA-4412 is in progress", "JIRA-4412 is done"),
    ("| JIRA-4412 | In Progress |", "| JIRA-4412 | Done |"),
    ("JIRA-4412 → In Review", "JIRA-4412 status: Done"),
    (("agent", "PAY-88: blocked"), "PAY-88 is unblocked and in review"),
    ("- PAY-88 todo", "Moved PAY-88 from todo to in progress"),
    ("spotter-gqc.2 is in progress", "spotter-gqc.2 is done"),  # a tracker's sub-task
    ("PAY-88 (P1) is blocked", "PAY-88 is in review"),  # a priority label is not a second thing
    (("tool", "○ spotter-gqc.7 [● P2] [task] - Launch the review (blocked)"), ("tool", "✓ Closed spotter-gqc.7: Launched")),
])
def test_a_work_items_later_state_supersedes_its_earlier_one_in_any_words(
        old: str | tuple[str, str], new: str | tuple[str, str]) -> None:
    """A ticket is in one state at a time (`workstate`): these held no value, so nothing linked
    them and both read as current (issue 25's held-out "work-item states")."""
    assert _current(old, new) == [_text(new)]


@pytest.mark.parametrize("pair", [
    ("JIRA-4412 is done", "JIRA-4413 is in progress"),  # another item
    ("JIRA-4412 is done", "JIRA-4412 was in progress for a week"),  # its history
    ("JIRA-4412 is in progress", "Is JIRA-4412 done?"),  # a question
    ("JIRA-4412 is done", "JIRA-4412 is not blocked"),  # a negation
    ("JIRA-4412 is in progress", "JIRA-4412 blocked on PAY-88"),  # two things named
    ("JIRA-4412 is in review", "JIRA-4412 done in staging, prod still open"),  # two states, no move
    ("JIRA-4412 is in review", "JIRA-4412 will be done once QA signs off"),  # a plan
    ("spotter-gqc.2 is done", "spotter-gqc.3 is in progress"),  # another sub-task of the same epic
    ("PAY-88 (P1) is done", "PAY-89 (P1) is in progress"),  # another item, both beside a label
    (("tool", "✓ Updated issue: spotter-4te.1"), ("tool", "✓ Updated issue: spotter-4te.2")),  # not one item at 1, then 2
])
def test_a_line_that_is_not_a_work_items_state_now_replaces_none(pair: tuple[str | tuple[str, str], ...]) -> None:
    assert _current(*pair) == [_text(p) for p in pair]


@pytest.mark.parametrize(("old", "new"), [
    ("p95 latency target 250ms", "we tightened the p95 latency target to 200ms"),
    ("Staging cluster has 6 nodes.", "Scaled staging cluster to 9 nodes."),
    ("rate limit is 500 rpm", "rate limit increased to 900 rpm"),
    # a topic that is only a name: the name alone, with a value of the same kind
    ("Our SLA is 99.9%.", "The SLA was raised to 99.95%."),
    ("CPU quota is 4 cores.", "Update: CPU quota is now 6 cores."),
])
def test_a_number_said_to_change_by_its_verb_supersedes(old: str, new: str) -> None:
    """"tightened", "scaled", "increased" only say a value changed, as "moved" does (`reword._MOVES`)."""
    assert _current(old, new) == [new]


@pytest.mark.parametrize("pair", [
    ("the deadline is Thursday", "should we move the deadline to Friday?"),  # it replaced the deadline
    ("rate limit is 500 rpm", "should we raise the rate limit to 800 rpm?"),
    ("Staging cluster has 6 nodes.", "We scaled the prod cluster to 9 nodes."),  # another cluster
    ("Our SLA is 99.9%.", "The API was raised to 99.95%."),  # another name
    ("Our SLA is 99.9%.", "The SLA was raised to 4 hours."),  # another kind of value
    ("The SLA is 99.9% for EU.", "The SLA was raised to 99.95%."),  # a name that qualifies the old line
    ("CPU is 80%.", "CPU on node-3 raised to 95%."),  # ... or the new one
])
def test_a_question_or_another_things_change_replaces_nothing(pair: tuple[str, str]) -> None:
    assert _current(*pair) == list(pair)


@pytest.mark.parametrize(("old", "new"), [
    ("Max batch size = 64", "batch size bumped to 128"),
    ("Budget cap is $956 total.", "Budget cap raised to $1200."),
    ("Target release date: 2026-03-01", "Release date slipped to 2026-03-15"),
    ("Warm pool: 12 instances", "We doubled the warm pool to 24 instances."),
])
def test_a_value_said_to_change_in_fewer_words_supersedes(old: str, new: str) -> None:
    """A number-change verb (`reword.CHANGED_BY`) is an update cue for a line that states a value:
    the earlier line may say more of the thing ("Max", "total", "Target") than the change does."""
    assert _current(old, new) == [new]


@pytest.mark.parametrize("pair", [
    # another qualifier right before the word both say: two things, whatever the update cue
    ("Conference spending ceiling is $5000", "Project spending ceiling raised to $9000"),
    ("Conference spending ceiling is $5000", "Project spending ceiling is now $9000"),
    ("The staging cluster has 12 nodes", "The prod cluster now has 20 nodes"),
    ("Frontend deploy freeze lasts 3 days", "Backend deploy freeze extended to 5 days"),
    # a number-change verb without a new value, or beside a line without one, replaces nothing
    ("Error rate is 2%", "Errors increased after the deploy."),
    ("Latency p50 is 120ms", "Traffic increased 40% this week"),
    ("Keep the release notes short", "We reduced the release to 3 services"),
    # an identifier says nothing of what it is: a synonym group (build ~ release) is not the attribute
    ("The build tag is rc-41.", "The release branch switched to rel-4-2."),
])
def test_a_change_of_another_thing_or_without_a_value_replaces_nothing(pair: tuple[str, str]) -> None:
    assert _current(*pair) == list(pair)


@pytest.mark.parametrize(("old", "new"), [
    # a quantity with a unit glued on is a value (512Mi, 75F), and a number with thousands one value
    ("Memory limit 512Mi", "memory limit bumped to 1Gi"),
    ("Temperature threshold is 75F", "Lower the temperature threshold to 70F"),
    ("The contract value is $120,000.", "Correction: the contract value should be $135,000."),
    # a word and its abbreviation are one attribute; a correction says it changes what was said
    ("The database port is 5432.", "Update: db port -> 6432"),
    ("The database port is 5432.", "Ignore what I said about the database port, it's 6432."),
    # after attribute words alone, an identifier is the attribute's value, not a subject
    ("Region: us-east-1", "We migrated to eu-west-1 last night; region is eu-west-1 going forward."),
    ("Node version 18", "We upgraded Node to version 20"),
])
def test_a_value_in_another_form_supersedes(old: str, new: str) -> None:
    assert _current(old, new) == [new]


@pytest.mark.parametrize("pair", [
    ("Blocked: T-14", "Blocked: T-15"),  # after a label an identifier stays the subject
    ("Keep spend under $300 a day", "Daily spend is now $250"),  # a value never replaces a rule
    ("The staging db has 16 GB", "Correction: the prod db has 32 GB"),  # another qualifier
])
def test_a_value_of_another_thing_or_a_rule_stays(pair: tuple[str, str]) -> None:
    assert _current(*pair) == list(pair)


@pytest.mark.parametrize(("old", "new"), [
    ("Status of BUG-9: investigating", "BUG-9 fixed in v2.3.1"),  # a version beside the state says where
    ("PAY-88 is in review", "PAY-88 deployed on 2026-03-02"),
    ("PROJ-12 assigned to @kim", "PROJ-12 reassigned to @lee"),  # one assignee, in the owner group
])
def test_a_work_items_state_or_assignee_with_a_version_or_date_beside_it_supersedes(old: str, new: str) -> None:
    assert _current(old, new) == [new]


def test_a_version_with_a_v_is_one_value_not_a_name_and_a_number() -> None:
    u = facts.analyse("Upgrade the client to v2.3.1", "user")
    assert u.values == {"v2.3.1"} and not u.names


@pytest.mark.parametrize("pair", [
    ("BUG-9 fixed in v2.3.1", "BUG-10 is in review"),  # two items
    ("PAY-88 is in review", "PAY-88 retry budget is 3"),  # a number is what the line states, not a state
])
def test_another_items_state_or_a_value_beside_a_state_replaces_nothing(pair: tuple[str, str]) -> None:
    assert _current(*pair) == list(pair)


@pytest.mark.parametrize(("old", "new"), [
    ("Owner: Alice", "Owner: Bob"),  # a record's value may be words, after a key of attribute words
    ("Region: Frankfurt", "Region: Dublin"),
])
def test_a_key_of_attribute_words_with_a_value_of_words_supersedes(old: str, new: str) -> None:
    assert _current(old, new) == [new]


@pytest.mark.parametrize("pair", [
    ("Owner: Alice", "Reviewer: Bob"),  # another key
    ("Owner: Alice", "Owner of billing-svc: Bob"),  # the other names a subject of its own
    ("Region: Frankfurt", "Zone: b"),  # a synonym group is not the same words for a value of words
    ("Owner: Alice", "Note: Bob is out today"),
])
def test_a_value_of_words_under_another_key_replaces_nothing(pair: tuple[str, str]) -> None:
    assert _current(*pair) == list(pair)


@pytest.mark.parametrize(("old", "new"), [
    # a URL of any scheme is one value (before, only http(s): s3://acme-stg was read as two names)
    ("Uploads go to s3://acme-stg.", "Uploads go to s3://acme-stg2 from now on."),
    ("The orders database is postgres://pg-main-3:5432/orders", "The orders database moved to postgres://pg-main-4:5432/orders"),
    # a day of the month is a date (before, "the 19th" held no value at all)
    ("The sprint ends on the 12th.", "Sprint end pushed to the 19th."),
    ("Code freeze starts on the 3rd.", "Code freeze moved to the 5th."),
])
def test_a_url_of_any_scheme_or_a_day_of_the_month_is_a_value_a_change_replaces(old: str, new: str) -> None:
    assert _current(old, new) == [new]


@pytest.mark.parametrize("pair", [
    ("Uploads go to s3://acme-stg.", "Logs go to s3://acme-logs."),  # another thing's bucket
    ("The sprint ends on the 12th.", "The release is on the 19th."),
    ("The sprint ends on the 12th.", "The sprint has 3 open tickets."),  # another kind of value
    ("Uploads go to s3://acme-stg.", "We use a 3rd-party uploader for images."),  # "3rd-party" is no date
])
def test_another_things_url_or_day_replaces_nothing(pair: tuple[str, str]) -> None:
    assert _current(*pair) == list(pair)


def test_a_url_and_a_day_are_what_the_line_holds() -> None:
    assert facts.held_values(facts.analyse("Uploads go to s3://acme-stg.", "user")) == {"s3://acme-stg"}
    assert facts.held_values(facts.analyse("The sprint ends on the 12th.", "user")) == {"12th"}
    assert facts.value_kinds(frozenset({"12th", "s3://acme-stg"})) == {"date", "address"}
    assert not facts.held_values(facts.analyse("We use a 3rd-party uploader.", "user"))


def test_a_list_or_line_number_is_no_value_and_links_nothing() -> None:
    # real sessions: "1" of a numbered list item whose title says "updates" (a correction cue)
    # replaced every earlier line holding a 1, a diff stat and each file's first line among them
    lines = ["10 files changed, 548 insertions(+), 1 deletion(-)", "     1→defmodule SpotterWeb.Router do",
             "1. [● P1] [epic] spotter-a0y: Single-session transcript bootstrap sync + live tail updates"]
    store = FactStore()
    store.extend([(facts.analyse(t, "tool"), i + 1) for i, t in enumerate(lines)])
    assert [r.text for r in store.current()] == lines
    assert facts.held_values(facts.analyse(lines[2], "tool")) == set()
    assert facts.held_values(facts.analyse("3) Retry limit: 5", "tool")) == {"5"}
    assert facts.held_values(facts.analyse("    40→ PORT = 8080", "tool")) == {"8080"}
    # and a correction still corrects
    assert _current("Retry limit: 5", "Correction: retry limit is 7") == ["Correction: retry limit is 7"]


def test_a_numbered_list_item_is_one_unit_and_its_number_no_fact() -> None:
    # before, "1. Use port 8080." was split into "1." (a fact of its own, value 1) and the rest
    plan = "Plan:\n1. Use port 8080. Then restart it.\n2. Use Redis for the cache.\n3) Deploy to eu-west-1."
    assert facts.split_units(plan) == ["Plan:", "1. Use port 8080.", "Then restart it.", "2. Use Redis for the cache.",
                                       "3) Deploy to eu-west-1."]
    assert "1." not in _current(plan) and "2." not in _current(plan)
    # a checklist item's later state still replaces it
    assert _current("1. [ ] MIG-7 backfill", "1. [x] MIG-7 backfill") == ["1. [x] MIG-7 backfill"]


def test_a_correction_word_in_a_tools_output_is_data_and_corrects_nothing() -> None:
    # real sessions: "NOT NULL", "updated_at", "Updated issue" in tool output read as corrections,
    # and each replaced an earlier output line sharing a value or a name with it
    lines = ["17→ session_id TEXT NOT NULL REFERENCES sessions(id),", "38→ pane_id TEXT NOT NULL,",
             "45→ inserted_at TEXT NOT NULL,", "46→ updated_at TEXT NOT NULL"]
    store = FactStore()
    store.extend([(facts.analyse(t, "tool"), i + 1) for i, t in enumerate(lines)])
    assert [r.text for r in store.current()] == lines
    assert not facts.analyse("46→ updated_at TEXT NOT NULL", "tool").correction
    # a person's or the agent's correction still corrects
    assert facts.analyse("Correction: the pool size is 20, not 10", "agent").correction
    assert _current("The pool size is 10", ("agent", "Correction: the pool size is 20, not 10")) == [
        "Correction: the pool size is 20, not 10"]


def test_an_agent_planning_an_update_corrects_nothing() -> None:
    # real sessions: "update" in an agent's plan read as a correction, and the plan replaced the
    # tracker's "Closed" line, a plan step and source lines that named the same module
    closed = ("tool", "✓ Closed spotter-a0y.2: Implemented sync_session_by_id/2, sync_session_file/2, Message upsert "
              "identity, transcript_dir backfill, bootstrap triggers in hook controller and SessionLive mount.")
    plan = ("agent", "Now update SessionLive to subscribe to `session_activity` and `session_transcripts:<session_id>`, "
            "and handle transcript updates.")
    assert _current(closed, plan) == [closed[1], plan[1]]
    for said in ("Let me update the tests next.", "I'll create the CSS, update the layout.", "live tail updates"):
        assert not facts.analyse(said, "agent").correction, said
    # an update announced, or ordered at the start of the line, still corrects
    for said in ("Update: the pool size is 20", "Quick update - the pool size is 20", "We updated the pool size to 20",
                 "Update the pool size to 20.", "Please update the pool size to 20."):
        assert facts.analyse(said, "user").correction, said
        assert _current("The pool size is 10", said) == [said]


@pytest.mark.parametrize(("old", "new"), [
    # a practice moved off, naming only the option it drops, or in its own words
    ("We use MySQL.", "We're migrating off MySQL to Postgres."),
    ("We deploy with Helm.", "We decided against Helm; we deploy with Kustomize."),
    ("We're running on ECS.", "Moving off ECS to EKS next quarter."),
    # a duty handed over, the old holder named after "from"
    ("Alice is on call this week.", "Bob took over on-call from Alice."),
    ("Dana handles support escalations.", "Eli is taking over support escalations from Dana."),
    # renamed, or a limit loosened: said to change by its verb
    ("The default branch is master.", "We renamed the default branch to main."),
    ("Rate limit: 100/min", "rate limit loosened to 500/min"),
    # a part replaced, said by a thing rather than "we"; a pronoun's verb is no topic word
    ("Auth uses JWT.", "We replaced JWT with opaque session tokens."),
    ("We're targeting Python 3.11.", "Actually target Python 3.12."),
    ("Use Node 18 for the build.", "Upgrade the build to Node 20."),
    ("Test coverage is at 62%.", "Coverage is up to 71%."),
    # a duration in words is the duration in letters: one kind of value
    ("Timeout is 30 seconds.", "Timeout is now 45s."),
    ("The request timeout is 30s.", "Request timeout changed to 2 minutes."),
    ("Cache TTL: 5 minutes", "TTL is 10 minutes going forward."),
    # the old value named after "from", the line it held it in about nothing else; cut, reassigned
    ("The queue is SQS.", "We moved the queue from SQS to RabbitMQ."),
    ("Budget: $12,000", "Budget cut to $9,500."),
    ("Ticket owner: Priya", "Reassigned the ticket to Omar."),
])
def test_a_practice_dropped_a_duty_handed_over_a_rename_or_a_change_in_other_words_supersedes(old: str, new: str) -> None:
    assert _current(old, new) == [new]


@pytest.mark.parametrize("pair", [
    ("We use Redis for caching.", "We dropped MySQL."),  # drops another option
    ("We deploy with Helm.", "We stopped using Jenkins."),
    ("We use MySQL for orders-api.", "We're migrating billing-api off MySQL."),  # another thing moves off
    ("Alice is on call this week.", "Bob took over billing from Alice."),  # another duty of the same person
    ("Alice owns the billing migration.", "Bob took over on-call from Alice."),
    ("The release branch is rel-4-2.", "We renamed the default branch to main."),
    ("Auth uses JWT.", "We replaced the logo with a new one."),
    ("billing-api uses JWT.", "We replaced JWT in search-api."),
    ("Coverage is up to 71%.", "Latency is up to 300ms."),
    ("The queue is SQS.", "We moved billing-api from SQS to RabbitMQ."),
    ("Budget: $12,000", "Travel costs cut to $900."),
    ("Ticket owner: Priya", "Reassigned the pager to Omar."),  # the cue's own word (assign: owner) is no topic
    ("LR-12 owner: Priya", "Reassigned LR-14 to Omar."),
    # a choice that shares one word with what is dropped: the dropped thing is named, and is not pytest
    ("We use pytest for the tests.", "We dropped the flaky test."),
])
def test_a_move_off_another_option_or_a_handoff_of_another_duty_replaces_nothing(pair: tuple[str, str]) -> None:
    assert _current(*pair) == list(pair)


def test_a_quantitys_kind_is_its_unit() -> None:
    assert facts.value_kinds(frozenset({"30 seconds", "45s", "2 minutes"})) == {"duration"}
    assert facts.value_kinds(frozenset({"99.9%", "4 hours", "512Mi", "800 rpm", "75F"})) == {
        "percent", "duration", "size", "rate", "quantity"}
    assert facts.held_values(facts.analyse("Timeout is 30 seconds.", "user")) == {"30 seconds"}


def test_a_tools_line_replaces_no_line_of_the_same_output_but_a_later_output_restates_it() -> None:
    # real sessions: two hook commands under one JSON key, two entries of one directory listing;
    # the later line of the same output replaced the earlier one, which left the current facts
    hooks = ['26→ "command": "${CLAUDE_PLUGIN_ROOT}/scripts/pre-tool-capture.sh",',
             '38→ "command": "${CLAUDE_PLUGIN_ROOT}/scripts/post-tool-capture.sh",']
    for lines in (hooks, ["drwxrwxr-x 98 marco marco 4096 Feb 12 15:13 ..", "drwxrwxr-x 3 marco marco 4096 Feb 12 15:13 _build"]):
        one_output = FactStore()
        one_output.extend([(facts.analyse(t, "tool"), 5) for t in lines])
        assert [r.text for r in one_output.current()] == lines
        two_outputs = FactStore()
        two_outputs.extend([(facts.analyse(t, "tool"), seq) for t, seq in zip(lines, (5, 9), strict=True)])
        assert [r.text for r in two_outputs.current()] == lines[1:], "a later output still restates it"


def test_a_host_name_with_a_digit_is_one_name() -> None:
    # before, db-1.internal was read as db-1 and internal: db-1.staging's port replaced its port
    assert facts.analyse("db-1.internal listens on port 5432.", "user").names == {"db-1.internal"}
    assert facts.analyse("pg-main-2.prod.internal is primary", "user").names == {"pg-main-2.prod.internal"}
    assert _current("db-1.internal listens on port 5432.", "db-1.staging listens on port 6432.") == [
        "db-1.internal listens on port 5432.", "db-1.staging listens on port 6432."]
    # a version and a dotted id with a number last are not host names
    assert facts.analyse("v1.2.3 shipped", "user").values == {"v1.2.3"}
    assert "db-1.internal" in facts.analyse("db-1.internal", "user").names

