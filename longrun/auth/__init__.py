"""Identity: principals, their Ed25519 keys, signed decision records and how they are checked.

- `longrun.models.signed` (data, so workflow inputs can carry it): what is signed (a decision,
  a scope, the end of a scope) and the proof carrying it;
- `keys`: key pairs, private key files (mode 0600), signing, signature checks;
- `check`: whether a proof holds at a moment against a registered credential.

Postgres keeps principals and public keys (`longrun.store.principals`); the worker's grant
activities verify a proof before anything is written; `audit --verify` re-verifies every
recorded decision (`longrun.auth.audit_check`). docs/SECURITY.md has the trust model.
"""

from longrun.auth.check import ROLES, Credential, check_proof
from longrun.auth.keys import Signer, default_key_path, key_id_of, keys_dir, new_key, public_pem, write_private_key
from longrun.models.signed import DecisionRecord, Proof, ScopeRecord, ScopeRevokeRecord

__all__ = [
    "ROLES",
    "Credential",
    "DecisionRecord",
    "Proof",
    "ScopeRecord",
    "ScopeRevokeRecord",
    "Signer",
    "check_proof",
    "default_key_path",
    "key_id_of",
    "keys_dir",
    "new_key",
    "public_pem",
    "write_private_key",
]
