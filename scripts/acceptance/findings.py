"""What acceptance says of a node for one check (a Finding) and the words
it says it in: the verdicts of a finding and of a node, and what judged it.
verdicts.py decides them from ReFrame's run report; health.py, compare.py,
confirm.py, repair.py and the summary read and add to them."""
from __future__ import annotations

from dataclasses import dataclass, field

PASS, FAIL, NOT_MEASURED = 'pass', 'fail', 'not_measured'
PUBLISHED, SITE_BASELINE, PEERS = 'published', 'site_baseline', 'peers'
BAD, SUSPECT, GOOD = 'bad', 'suspect', 'good'
#: A node flagged on some basis whose flag did not repeat when measured
#: again alone (--confirm): recorded and shown, never drained or reported.
FLAKY = 'flaky'
#: A result no basis could judge: no published reference or site baseline,
#: and its peers too few or too spread to say (scripts/comparison/peers.py's
#: 'not judged'). A finding's verdict and a node's.
NOT_JUDGED = 'not_judged'
#: Why a failure that passed when measured again is set aside (its node is
#: flaky, not bad).
PASSED_AGAIN = 'passed when measured again'
#: A node Slurm keeps powered off that this run did not start: not bad,
#: not broken, not measured either.
POWERED_DOWN = 'powered_down'
POWERED_DOWN_REASON = 'powered down; `--power-up` to include'
# Worst first: the order of the summary.
NODE_VERDICTS = (BAD, SUSPECT, FLAKY, NOT_JUDGED, NOT_MEASURED, POWERED_DOWN,
                 GOOD)
WHOLE_PARTITION = '*'


@dataclass
class Finding:
    """One node's outcome for one check (and metric, where there is one)."""
    node: str
    partition: str
    check: str
    verdict: str
    scope: str = 'node'
    metric: str | None = None
    value: float | None = None
    unit: str | None = None
    reference: float | None = None
    reason: str = ''
    partner: str | None = None
    jobid: str | None = None
    attempts: int = 1
    blamed_on_partner: bool = False
    #: what judged it: 'published', 'site_baseline' or 'peers' (None: the
    #: tool's own error, or not judged)
    basis: str | None = None
    #: the stored row it judges (its record_id), where one is known
    record_id: str | None = None
    #: why this failure is not the node's ('' = it is): shared by most of
    #: the partition (common_mode.py), or passed when measured again
    #: (--confirm)
    set_aside: str = ''
    #: the verdict of each confirmation run (--confirm), in order
    confirmations: list = field(default_factory=list)
    #: what was found, where a health rule found it: the rule's name
    #: (checks/references/health.yaml, e.g. 'link_downed'); '' for a
    #: benchmark's finding, whose kind is its check class
    kind: str = ''
    #: the device a health finding is about (an HCA port, a GPU)
    device: str | None = None
    #: the GPU a health finding is about: index, bus id, serial
    gpu: dict | None = None

    @property
    def confirmed(self) -> bool:
        """A failure of this node that was measured again (--confirm) and
        failed every time: the only kind that is drained or reported."""
        return self.verdict == FAIL and not self.set_aside and \
            not self.blamed_on_partner and bool(self.confirmations) and \
            all(str(c).startswith(FAIL) for c in self.confirmations)

    @property
    def flaky(self) -> bool:
        """A failure that did not repeat when measured again."""
        return self.verdict == FAIL and self.set_aside == PASSED_AGAIN

    def as_dict(self) -> dict:
        return {**self.__dict__, 'confirmed': self.confirmed}
