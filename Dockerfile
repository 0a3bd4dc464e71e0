# The course in a container: CUDA-enabled PyTorch, JupyterLab on port 8888, a non-root user.
#   docker build -t gpu-course .
#   docker run --gpus all -p 8888:8888 -e JUPYTER_TOKEN=choose-a-secret gpu-course
# Without JUPYTER_TOKEN a random token is generated and printed in the log (never an empty one).
FROM pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime

ENV PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    MPLCONFIGDIR=/tmp/matplotlib

RUN useradd --create-home --uid 1000 --shell /bin/bash student
WORKDIR /home/student/course

# Dependencies come from pyproject.toml only (torch is already in the base image and satisfies >=2.4).
COPY --chown=student:student pyproject.toml README.md ./
COPY --chown=student:student course_utils ./course_utils
RUN pip install -e ".[lab,test]"
COPY --chown=student:student . .

USER 1000:1000
EXPOSE 8888
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8888/api', timeout=4)"]
ENTRYPOINT ["/home/student/course/tools/docker-entrypoint.sh"]
