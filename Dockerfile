# A longrun worker (and CLI) image built from this repository.
#   docker build -t longrun .
#   docker run --rm -e LONGRUN_DATABASE_URL=... -e TEMPORAL_ADDRESS=... longrun            # a worker
#   docker run --rm -e ... longrun longrun status RUN                                       # the CLI
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# run_command runs in a sandbox (docs/SECURITY.md): bubblewrap needs user namespaces, which
# Docker's default seccomp profile refuses; run with `--security-opt seccomp=unconfined` (or a
# profile that allows them), or set LONGRUN_SANDBOX=none and let the container be the boundary.
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY longrun ./longrun
COPY samples ./samples
RUN pip install .

# Workers run tools inside the workspaces they are given; run them as an unprivileged user.
RUN useradd --create-home --uid 10001 longrun && mkdir -p /workspaces && chown longrun /workspaces
USER longrun
ENV LONGRUN_HOME=/home/longrun/.longrun

CMD ["longrun", "worker"]
