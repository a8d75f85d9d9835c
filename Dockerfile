# simroute router image. Built locally (no registry needed on machines that
# import a Debian base under this tag).
FROM python:3.13-slim
WORKDIR /app
COPY requirements.lock pyproject.toml README.md ./
COPY router router
COPY backends backends
COPY shadow shadow
COPY policies policies
COPY simroute simroute
# llama-cpp-python is left out of the router image: routers reach a served
# world model over HTTP; the in-process engine runs where the wheel is built.
RUN grep -v '^llama-cpp-python==' requirements.lock > /tmp/req.txt \
 && pip install --no-cache-dir -r /tmp/req.txt \
 && pip install --no-cache-dir --no-deps .
EXPOSE 8765 8080
ENTRYPOINT ["simroute"]
CMD ["serve", "--config", "/config/simroute.yaml", "--mcp", "0.0.0.0:8765"]
