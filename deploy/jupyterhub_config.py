# JupyterHub for a class of ~20 on one GPU server: each student gets their own single-user JupyterLab
# with one GPU or MIG slice (CUDA_VISIBLE_DEVICES, from the roster), CPU and memory limits, and the
# course preinstalled. How to set it up, and what it assumes about the server: deploy/README.md.
#
#   sudo COURSE_HUB_ROSTER=/srv/jupyterhub/students.txt jupyterhub -f deploy/jupyterhub_config.py
#
# Every setting comes from a COURSE_HUB_* environment variable (deploy/course_hub.py, Settings);
# none of them is a secret. Secrets never go on a command line (any user of the machine reads those
# with `ps`): the cookie secret is a file JupyterHub writes with mode 0600 and refuses to read when
# others can; the proxy's token is CONFIGPROXY_AUTH_TOKEN, generated when unset and handed to the
# proxy in its environment; each server's API token reaches it as JUPYTERHUB_API_TOKEN, in its
# environment too. An authenticator's own secrets (an OAuth client secret, an LDAP bind password)
# belong in the environment or in COURSE_HUB_EXTRA_CONFIG, a file only root can read.
import os
import pwd
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import course_hub  # noqa: E402  (beside this file)

c = get_config()  # noqa: F821  (defined by JupyterHub when it loads this file)
settings = course_hub.Settings.from_env()
roster = course_hub.read_roster(settings.roster)
devices = course_hub.list_devices(settings.devices)
assignment = course_hub.assign_devices(roster, devices)  # username -> GPU or MIG UUID
for _user, _uuid in assignment.items():
    print(f"course hub: {_user} -> CUDA_VISIBLE_DEVICES={_uuid}", file=sys.stderr)

# --- Who logs in ------------------------------------------------------------------------------------
c.JupyterHub.authenticator_class = settings.authenticator
c.Authenticator.allowed_users = {user for user, _ in roster}
c.Authenticator.admin_users = {u.strip() for u in os.environ.get("COURSE_HUB_ADMINS", "").split(",") if u.strip()}
if settings.authenticator == "native":
    try:
        import nativeauthenticator
    except ImportError:
        raise SystemExit("COURSE_HUB_AUTHENTICATOR=native needs `pip install jupyterhub-nativeauthenticator`"
                         " (or choose another authenticator: deploy/README.md)") from None
    c.JupyterHub.template_paths = [os.path.join(os.path.dirname(nativeauthenticator.__file__), "templates")]

# --- Where it listens and keeps its state ------------------------------------------------------------
# Loopback by default: students come in through an SSH tunnel, or a TLS reverse proxy on this host.
c.JupyterHub.bind_url = settings.bind_url
c.JupyterHub.cookie_secret_file = str(settings.data_dir / "jupyterhub_cookie_secret")
c.JupyterHub.db_url = f"sqlite:///{settings.data_dir / 'jupyterhub.sqlite'}"

# --- Each student's server ----------------------------------------------------------------------------


def visible_devices(spawner) -> str:
    """The student's GPU or MIG slice; an empty value (no GPU at all) for anyone not on the roster."""
    uuid = assignment.get(spawner.user.name)
    if uuid is None:
        spawner.log.warning("course hub: %s is not on the roster: no GPU for this server", spawner.user.name)
        return ""
    return uuid


environment = {"CUDA_VISIBLE_DEVICES": visible_devices} if devices else {}  # CPU-only: left unset
c.Spawner.mem_limit = settings.mem_limit
c.Spawner.cpu_limit = settings.cpu_limit
c.Spawner.default_url = "/lab/tree/notebooks"
c.Spawner.start_timeout = 180  # importing torch on a busy server takes a while
c.Spawner.http_timeout = 120

if settings.spawner == "docker":
    # One container per student from the course image (`docker build -t gpu-course .`): only the
    # assigned device exists inside it, the limits are the container's cgroup limits, and the course
    # folder is a named volume per student, filled from the image on first start and kept afterwards.
    c.JupyterHub.spawner_class = "docker"
    c.DockerSpawner.image = settings.image
    c.DockerSpawner.cmd = ["jupyterhub-singleuser"]  # the image's entry point runs it as given
    c.DockerSpawner.notebook_dir = "/home/student/course"
    c.DockerSpawner.volumes = {"gpu-course-{username}": "/home/student/course"}
    c.DockerSpawner.remove = True  # the container goes when the server stops; the volume stays

    def docker_host_config(spawner) -> dict:
        config = {"shm_size": os.environ.get("COURSE_HUB_SHM_SIZE", "2g")}  # /dev/shm: lessons 08, 09
        uuid = assignment.get(spawner.user.name)
        if uuid:
            config["device_requests"] = [{"Driver": "nvidia", "DeviceIDs": [uuid], "Capabilities": [["gpu"]]}]
        return config

    c.DockerSpawner.extra_host_config = docker_host_config
    # Containers reach the hub's API on the docker0 bridge (172.17.0.1 by default: `ip -4 addr show docker0`).
    hub_ip = os.environ.get("COURSE_HUB_DOCKER_HUB_IP", "172.17.0.1")
    c.JupyterHub.hub_bind_url = f"http://{hub_ip}:8081"
    c.JupyterHub.hub_connect_url = f"http://{hub_ip}:8081"
else:
    # systemd: each student's server is a transient unit running as their own account, with
    # MemoryMax= and CPUQuota= from the limits above; Python and the course's packages come from one
    # shared venv (`make setup` in COURSE_HUB_COURSE), the lessons from the student's own copy
    # ~/course (their own build/scratch, their own edits), which is imported first.
    c.JupyterHub.spawner_class = "systemd"
    c.SystemdSpawner.isolate_tmp = True
    c.SystemdSpawner.disable_user_sudo = True
    c.SystemdSpawner.default_shell = "/bin/bash"
    venv = os.environ.get("COURSE_HUB_VENV", "").strip() or str(settings.course / ".venv")
    c.Spawner.cmd = [os.path.join(venv, "bin", "jupyterhub-singleuser")]
    c.Spawner.notebook_dir = "~/course"

    def course_copy(spawner) -> str:
        home = getattr(spawner, "home_dir", "") or pwd.getpwnam(spawner.user.name).pw_dir
        return os.path.join(home, "course")

    environment["PYTHONPATH"] = course_copy

c.Spawner.environment = environment

# Site-specific settings (the authenticator's server address, client id, TLS files...), last.
if os.environ.get("COURSE_HUB_EXTRA_CONFIG"):
    load_subconfig(os.environ["COURSE_HUB_EXTRA_CONFIG"])  # noqa: F821
