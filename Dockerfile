# syntax=docker/dockerfile:1
# The gangsched image: the wheel built from this repository on a slim Python, as the non-root
# user the chart runs it as (65532), ready for a read-only root filesystem (the chart mounts
# /var/lib/gangsched and /tmp). One image for every service: `gangsched watcher|planner|binder
# |migrate` (the chart passes the command as args).
#
#   docker build -t registry.example.com/gangsched:0.1.0 . && docker push registry.example.com/gangsched:0.1.0
#   printf 'image: {repository: registry.example.com/gangsched, tag: "0.1.0"}\n' > my-values.yaml
#   helm install gangsched deploy/chart -n gangsched --create-namespace -f my-values.yaml
#
# Not built in CI (no container engine there); the chart's tests run the same commands as
# local processes.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY services ./services
COPY migrations ./migrations
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/gangsched/bin:$PATH \
    HOME=/tmp
COPY --from=build /wheels /wheels
RUN python -m venv /opt/gangsched \
    && /opt/gangsched/bin/pip install --no-cache-dir /wheels/*.whl \
    && rm -rf /wheels \
    && /opt/gangsched/bin/python -m compileall -q /opt/gangsched/lib
# The wheel installs the alembic scripts as data files into <prefix>/share/gangsched/migrations,
# where services/store/schema.py finds them.
RUN groupadd --gid 65532 gangsched \
    && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /var/lib/gangsched \
       --shell /usr/sbin/nologin gangsched \
    && install -d -o 65532 -g 65532 /var/lib/gangsched
USER 65532:65532
WORKDIR /var/lib/gangsched
EXPOSE 8080
ENTRYPOINT ["gangsched"]
CMD ["--help"]
