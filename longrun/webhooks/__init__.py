"""Webhook notifications: where each webhook is (`config`), how a body is signed (`signing`),
what it says (`messages`) and how it is sent (`transport`). The activity that ties them to a run
is `longrun.activities.notify`; the workflow side is `longrun.workflows.notifications`."""

from longrun.webhooks.config import Webhook, WebhookDirectory, parse_names, secret_variable, target_of, url_variable
from longrun.webhooks.signing import SIGNATURE_HEADER, sign, verify_signature

__all__ = [
    "SIGNATURE_HEADER",
    "Webhook",
    "WebhookDirectory",
    "parse_names",
    "secret_variable",
    "sign",
    "target_of",
    "url_variable",
    "verify_signature",
]
