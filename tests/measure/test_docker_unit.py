"""Pure parts of the docker runtime: references, GPU requests, credentials by name."""

import pytest

from knee.core.errors import KneeError
from knee.measure.runtime import docker


def test_repository_strips_tag_and_digest_but_keeps_a_registry_port():
    repo = "127.0.0.1:5000/knee/vllm-cpu"
    assert docker.repository(f"{repo}:0.32.0") == repo and docker.repository(repo) == repo
    assert docker.repository("vllm/vllm-openai@sha256:" + "a" * 64) == "vllm/vllm-openai"


def test_gpu_requests_all_count_ids_and_none():
    assert docker.gpu_requests(None) == [] and docker.gpu_requests([]) == []
    (every,) = docker.gpu_requests("all")
    assert every["Count"] == -1 and every["Capabilities"] == [["gpu"]]
    assert docker.gpu_requests(2)[0]["Count"] == 2
    assert docker.gpu_requests([0, 3])[0]["DeviceIDs"] == ["0", "3"]


def test_credentials_come_from_named_variables_and_a_missing_one_is_named(monkeypatch):
    image = {"ref": "r:t", "digest": "sha256:" + "0" * 64, "username_env": "KNEE_U",
             "password_env": "KNEE_P"}
    monkeypatch.setenv("KNEE_U", "me")
    monkeypatch.delenv("KNEE_P", raising=False)
    with pytest.raises(KneeError, match=r"runtime.image.password_env: \$KNEE_P is not set"):
        docker.credentials(image)
    monkeypatch.setenv("KNEE_P", "s3cret")
    assert docker.credentials(image) == {"username": "me", "password": "s3cret"}
    assert docker.credentials({"ref": "r:t"}) is None


def test_run_spec_binds_loopback_mounts_model_read_only_and_labels():
    c = docker.Container(image="r@sha256:" + "a" * 64, command=["--port", "8000"],
                         env={"HF_TOKEN": "x"}, log=None, host="127.0.0.1", port=4321,
                         model_dir="/m", cache_dir="/c",
                         labels={docker.LABEL_EXPERIMENT: "e", docker.LABEL_SESSION: "1-control"})
    spec = c.run_spec()
    assert spec["ports"] == {"8000/tcp": ("127.0.0.1", 4321)} and spec["ipc_mode"] == "host"
    assert spec["volumes"] == {"/m": {"bind": "/model", "mode": "ro"},
                               "/c": {"bind": "/cache", "mode": "rw"}}
    assert "device_requests" not in spec
    assert docker.Container(**{**c.__dict__, "shm_size": "8g", "container": None,
                               "_follower": None}).run_spec()["shm_size"] == "8g"
