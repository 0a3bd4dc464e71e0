# The course in a container: CUDA-enabled PyTorch, JupyterLab on port 8888, a non-root user.
#   docker build -t gpu-course .
#   JUPYTER_TOKEN=<secret> docker run --gpus all --ipc=host -p 127.0.0.1:8888:8888 -e JUPYTER_TOKEN gpu-course
#   docker run --gpus all --ipc=host -it gpu-course bash          # a shell instead of JupyterLab
# --ipc=host (or --shm-size=2g): DataLoader workers and NCCL pass tensors through /dev/shm, which is
# only 64 MB in a container by default. -p 127.0.0.1:...: Docker's published ports bypass the host's
# firewall, so publish on loopback only (reach it from elsewhere through an SSH tunnel).
# -e JUPYTER_TOKEN without a value copies it from your environment (keeps it off docker's argv).
# Without JUPYTER_TOKEN a random token is generated and printed in the log (never an empty one); the
# token reaches Jupyter through the environment, never a command line (tools/docker-entrypoint.sh).
#
# Base image: the exact tag of PyTorch 2.11.0's CUDA 12.8 runtime image (its CUDA 12.8 build supports
# compute capability 7.5 and newer). Pin a digest too for byte-for-byte rebuilds:
#   docker buildx imagetools inspect pytorch/pytorch:2.11.0-cuda12.8-cudnn9-runtime
FROM pytorch/pytorch:2.11.0-cuda12.8-cudnn9-runtime

ENV PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    MPLCONFIGDIR=/tmp/matplotlib

# The course folder belongs to the student (COPY --chown changes what it copies, not the folder it
# copies into): lessons 06, 07, 09 and `make run` create build/ there.
RUN useradd --create-home --uid 1000 --shell /bin/bash student \
    && install -d -o 1000 -g 1000 /home/student/course
WORKDIR /home/student/course

# 1. Dependencies, from pyproject.toml alone (plus exact pins), so that editing a lesson or the helper
#    code does not reinstall them: this layer is rebuilt only when these two files change. A stub
#    package stands in for course_utils; torch>=2.4 is already satisfied by the base image.
COPY --chown=1000:1000 pyproject.toml tools/docker-constraints.txt ./
RUN mkdir course_utils && touch course_utils/__init__.py README.md \
    && pip install --no-cache-dir -c docker-constraints.txt ".[lab,test]" \
    && pip uninstall -y course-utils \
    && rm -rf course_utils README.md build ./*.egg-info docker-constraints.txt

# 2. The course itself, installed editable without touching the dependencies.
COPY --chown=1000:1000 . .
RUN pip install --no-cache-dir --no-deps -e .

USER 1000:1000
EXPOSE 8888
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8888/api', timeout=4)"]
ENTRYPOINT ["/home/student/course/tools/docker-entrypoint.sh"]
CMD ["lab"]
