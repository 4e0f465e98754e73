"""``kquotactl completion bash|zsh|fish``: print the shell completion script (click's own machinery)."""

from __future__ import annotations

import click

from kquotactl.cli.groups import OnceCommand


@click.command(cls=OnceCommand, name="completion")
@click.argument("shell", metavar="SHELL", type=click.Choice(["bash", "zsh", "fish"]))
def completion_cmd(shell: str) -> None:
    """Print the shell completion script for SHELL.

    The script asks kquotactl itself what to offer at each Tab: commands, options, the quota keys valid
    for the entity on the line (--add-config), the keys set on that entity (--delete-config), and the
    user, client-id and ip names in the cluster or in the manifest given with -f. Write the script to
    the shell's completion directory (as below) to load it in every new shell.

    \b
    Examples:
      eval "$(kquotactl completion bash)"                      # this bash session
      kquotactl completion bash > ~/.local/share/bash-completion/completions/kquotactl
      kquotactl completion zsh > "${fpath[1]}/_kquotactl"      # then: autoload -U compinit && compinit
      kquotactl completion fish > ~/.config/fish/completions/kquotactl.fish
    """
    from kquotactl.cli.completion import source

    click.echo(source(shell), nl=False)
