"""``placer serve``: the HTTP placement service.

placer serve --cluster dgx8x8 --policy-file data/policies/pacml.pt --state .placer/dgx8x8.sqlite3
PLACER_TOKEN=... placer serve --host 0.0.0.0 --allowed-host placer.internal
PLACER_TOKEN=... placer serve --host 10.0.0.2 --trusted-proxy 10.0.0.1   (behind a reverse proxy at 10.0.0.1)
placer serve --host 0.0.0.0 --tenants tenants.toml   (named clients, each with its own token: docs/service.md)
"""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from placer.cli.app import app, err_console
from placer.cli.options import model_options
from placer.cluster.topology import load_cluster
from placer.serve.errors import ServeSetupError
from placer.serve.settings import ServiceSettings

if TYPE_CHECKING:
    from placer.serve.tenants import Tenant

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
MIB = 1024 * 1024


# The ServiceSettings fields that are options of placer serve: defaults, bounds and help are the model's
SETTINGS_OPTIONS = (
    "max_body_bytes",
    "max_graph_ops",
    "max_graph_edges",
    "body_timeout_s",
    "header_timeout_s",
    "send_timeout_s",
    "max_connections",
    "max_connections_per_client",
    "cache_bytes",
)
SETTINGS_UNITS = {"max_body_bytes": ("MiB", MIB), "cache_bytes": ("MiB", MIB)}
SETTINGS_NAMES = {"max_body_bytes": "--max-body-mb", "cache_bytes": "--cache-mb"}


@app.command()
@model_options(ServiceSettings, "limits", include=SETTINGS_OPTIONS, names=SETTINGS_NAMES, units=SETTINGS_UNITS, bounded=True)
def serve(
    limits: dict,
    cluster: Annotated[str, typer.Option(help="cluster preset name or TOML file")] = "pacml",
    policy_file: Annotated[Path | None, typer.Option(help="trained policy file (default: the lean heuristic)")] = None,
    heuristic: Annotated[str, typer.Option(help="heuristic used when no policy file is given")] = "lean",
    host: Annotated[str, typer.Option(help="address to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="port to bind (0: any free port)")] = 8000,
    state: Annotated[Path | None, typer.Option(help="SQLite file of reservations (default: .placer/<cluster>.sqlite3)")] = None,
    memory_only: Annotated[bool, typer.Option("--memory-only", help="keep reservations in memory: a restart forgets them")] = False,
    reset_state: Annotated[
        bool, typer.Option("--reset-state", help="start empty over a --state file that is not a usable reservation store")
    ] = False,
    token_file: Annotated[Path | None, typer.Option(help="file holding the bearer token clients must send (or set PLACER_TOKEN)")] = None,
    tenants: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="TOML file of named clients and their tokens (not with --token-file or PLACER_TOKEN)"),
    ] = None,
    allowed_host: Annotated[
        list[str] | None, typer.Option(help="a host name clients may address the service by (repeatable; loopback and --host always)")
    ] = None,
    trusted_proxy: Annotated[
        list[str] | None,
        typer.Option(
            metavar="ADDR",
            help="a proxy (IP address or network) whose X-Forwarded-For names the client (repeatable; none: the header is ignored)",
        ),
    ] = None,
) -> None:
    """Serve placement queries over HTTP, tracking which devices are reserved (durably, in --state).

    A token (--token-file or PLACER_TOKEN) or --tenants is required when binding beyond loopback.
    """
    from placer.baselines.registry import PolicyContext, make_policy
    from placer.serve.http import create_app
    from placer.serve.server import make_server
    from placer.serve.tokens import read_token

    _check_allowed_hosts(allowed_host or [])
    proxies = _proxies(trusted_proxy or [])
    token = read_token(token_file)
    clients = _tenants(tenants, token)
    if token is None and clients is None and not _is_loopback(host):
        raise ServeSetupError(
            f"binding to {host!r} reaches beyond this machine: give a token (--token-file FILE or PLACER_TOKEN) or --tenants FILE"
        )
    listener = _bind(host, port)  # bound before loading anything: a taken port fails in one line, port 0 gets its number
    topology = load_cluster(cluster)
    context = PolicyContext(topology, policy_file=policy_file)
    policy = make_policy("learned" if policy_file else heuristic, context)
    state_path = None if memory_only else (state or Path(".placer") / f"{topology.name}.sqlite3")
    settings = ServiceSettings(
        **limits,
        state_path=state_path,
        reset_state=reset_state,
        create_state_folder=state is None,  # only the default .placer/ is made; an explicit folder must exist
        token=token,
        tenants=clients,
        allowed_hosts=tuple(sorted({*LOOPBACK_NAMES, "[::1]", host, *(allowed_host or [])})),
        trusted_proxies=proxies,
    )
    app_ = create_app(topology, policy, settings)
    restored = len(app_.state.occupancy.jobs)
    where = f"reservations in {state_path} ({restored} restored)" if state_path else "reservations in memory only"
    access = f"{len(clients)} tenants" if clients else "bearer token required" if token else "no token (loopback only)"
    err_console.print(
        f"placer serve: cluster {topology.name}, policy {policy.name or 'learned'}, {where}, {access}, on {_url(host, listener)}"
    )
    make_server(app_, settings, host=host, port=listener.getsockname()[1], access_log=True).run(sockets=[listener])


def _check_allowed_hosts(patterns: list[str]) -> None:
    """One line for an --allowed-host that is a wildcard."""
    for pattern in patterns:
        if "*" in pattern:
            raise ServeSetupError(
                f"--allowed-host {pattern!r} would accept Host headers an attacker's DNS name can match (no DNS-rebinding check):"
                " name each host clients use"
            )


def _tenants(path: Path | None, token: str | None) -> tuple[Tenant, ...] | None:
    """The tenants of the --tenants file (None without one); one line for a file that cannot be used or a second token."""
    from placer.serve.tenants import load_tenants

    if path is None:
        return None
    if token is not None:
        raise ServeSetupError("give --tenants or a token (--token-file, PLACER_TOKEN), not both: the tenants file holds every token")
    return load_tenants(path).tenants


def _proxies(given: list[str]) -> tuple[str, ...]:
    """The --trusted-proxy values, each an IP address or network, or one line naming the one that is not."""
    for item in given:
        try:
            ipaddress.ip_network(item.strip(), strict=False)
        except ValueError:
            raise ServeSetupError(f"--trusted-proxy {item!r} is not an IP address or network (e.g. 10.0.0.5 or 10.0.0.0/24)") from None
    return tuple(given)


def _is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket for (host, port), or one line if it cannot be bound."""
    from placer.serve.server import bind

    try:
        return bind(host, port)
    except socket.gaierror as exc:
        raise ServeSetupError(f"cannot bind to host {host!r}: {exc.strerror}") from None
    except OSError as exc:
        raise ServeSetupError(f"cannot bind to {host}:{port}: {exc.strerror or exc}") from None


def _url(host: str, listener: socket.socket) -> str:
    """Where the service answers: the bound port (the real one when --port 0 was asked)."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{listener.getsockname()[1]}"
