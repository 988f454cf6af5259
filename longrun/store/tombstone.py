"""A pruned body's tombstone, re-exported from `longrun.models.tombstone`, where it lives so that
a bundle verifier (`longrun.evidence.verify`) can read tombstones without a database driver."""

from longrun.models.tombstone import PRUNED_KEY, Tombstone, placeholder, tombstone_of

__all__ = ["PRUNED_KEY", "Tombstone", "placeholder", "tombstone_of"]
