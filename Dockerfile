# simroute's router image (`simroute serve`, `simroute worker`): Debian trixie's
# Python 3.13 and the locked dependencies, llama-cpp-python included.
#
# Build input: .wheelhouse/ (scripts/stack-wheelhouse.sh fills it on the host), so
# nothing is fetched from a Python index or compiled here. Machines with a registry
# pull the base; machines without one import it under this tag
# (scripts/build-images.sh), so this one file builds in both places.
#   docker build --build-arg EXTRA_CA_CERT="$(cat extra-ca.pem)" .   # trust an extra CA
FROM debian:trixie-slim AS runtime
ARG EXTRA_CA_CERT=""
COPY deploy/image/os-packages.sh deploy/image/wheelhouse-install.sh /usr/local/sbin/
# libgomp1: llama.cpp's threads; libjs-chart.js: the dashboard's charts.
RUN os-packages.sh python3 libgomp1 libjs-chart.js
ENV PATH=/opt/simroute/bin:$PATH \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    PYTHONUNBUFFERED=1

# The dependencies in a stage of their own: the wheels never reach the final image,
# and this layer is rebuilt only when a lock changes.
FROM runtime AS dependencies
COPY .wheelhouse/wheels/ /wheels/
COPY requirements.lock deploy/image/extras.txt /tmp/requirements/
RUN wheelhouse-install.sh /opt/simroute -r /tmp/requirements/requirements.lock -r /tmp/requirements/extras.txt

FROM runtime
COPY --from=dependencies /opt/simroute /opt/simroute
COPY --from=dependencies /usr/local/bin/uv /usr/local/bin/uv
# Everything but simroute's own sources first: a change to them rebuilds the last steps only.
RUN useradd --no-log-init --uid 10001 --create-home --home-dir /home/simroute simroute \
 && mkdir -p /config/.simroute && chown -R simroute:simroute /config
# The in-process model runner (world_model.engine: llama): idle OpenMP threads sleep, not spin.
ENV OMP_WAIT_POLICY=PASSIVE
WORKDIR /config
EXPOSE 8765 8080
ENTRYPOINT ["simroute"]
CMD ["serve", "--config", "/config/simroute.yaml", "--mcp", "0.0.0.0:8765"]
COPY pyproject.toml README.md /src/
COPY calls /src/calls
COPY router /src/router
COPY backends /src/backends
COPY shadow /src/shadow
COPY records /src/records
COPY policies /src/policies
COPY simroute /src/simroute
# setuptools is in the environment (extras.txt): no build isolation, no index.
RUN UV_NO_CACHE=1 uv pip install -q --compile-bytecode --python /opt/simroute/bin/python --no-deps --no-build-isolation --no-index /src \
 && rm -rf /src
USER simroute
