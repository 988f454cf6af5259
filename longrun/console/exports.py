"""The run page's evidence export: an operator downloads the run's bundle (`longrun export
--family --sign-as`, docs/EVIDENCE.md), signed with their console key.

Operators only, because a bundle carries the whole transcript and every tool result out of the
building. The request is audited before the bundle is built (`operator_request`, action `export`),
and a refused one too, within the person's budget of audited refusals (`throttle.RefusalBudget`).
A POST with the CSRF token, not a link, so another site cannot make a signed-in browser ask.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse
from starlette.background import BackgroundTask

from longrun.console.api import console_of
from longrun.console.auth import Me, check_csrf, signer
from longrun.console.errors import Forbidden, NotFound
from longrun.errors import RunNotFoundError
from longrun.evidence.bundle import run_dir
from longrun.evidence.export import export_run
from longrun.models.audit import OperatorRequest

router = APIRouter(prefix="/api")


@router.post("/runs/{run_id}/export", summary="the run's evidence bundle (a zip), signed with your console key; "
             "operators only, audited", response_class=FileResponse)
async def export(run_id: str, request: Request, p: Me,
                 with_artifacts: bool = Query(default=False, description="include the artifacts' bytes")) -> FileResponse:
    check_csrf(request, p)
    c = console_of(request)
    try:
        await asyncio.to_thread(c.store.get_run, run_id)
    except RunNotFoundError as exc:
        raise NotFound(f"no run {run_id!r}: GET /api/runs lists them") from exc
    actor = f"human:{p.name}"
    if not p.can("operator"):
        why = (f"{p.name} has roles {', '.join(p.roles)}, not operator: only an operator exports a run's record "
               f"(`longrun approvers add {p.name} --role operator`)")
        if c.refusals.allow(p.name):
            await asyncio.to_thread(c.store.append_audit, run_id, OperatorRequest(
                principal=p.name, action="export", outcome="refused", reason=why), actor=actor)
        raise Forbidden(why)
    key = await asyncio.to_thread(signer, c, p)
    await asyncio.to_thread(c.store.append_audit, run_id,
                            OperatorRequest(principal=p.name, action="export", outcome="sent"), actor=actor)
    folder = Path(tempfile.mkdtemp(prefix="longrun-console-export-"))
    name = run_dir(run_id).removeprefix("runs/") + ".evidence.zip"
    try:
        await asyncio.to_thread(export_run, c.store, run_id, folder / name, with_artifacts=with_artifacts,
                                with_family=True, signer=key)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return FileResponse(folder / name, media_type="application/zip", filename=name,
                        background=BackgroundTask(shutil.rmtree, folder, ignore_errors=True))


__all__ = ["router"]
