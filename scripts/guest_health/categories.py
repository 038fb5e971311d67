"""Which Guest Health Reporting impact category a confirmed finding maps to.

The categories are the documented list (CATEGORIES_DOC); each mapping names
the finding kinds that lead to it and the public source that ties them. A
finding that maps to nothing is not reported, and why() says so.

Finding kinds are what acceptance knows of a failing finding: a health
rule's name (checks/references/health.yaml: 'port_state', 'link_downed',
'ecc_dbe_volatile', 'xid_error'...) or, for a benchmark that measured too
little, the check's class name ('StreamCheck', 'PerftestPair'...).
"""
from __future__ import annotations

from dataclasses import dataclass

CATEGORIES_DOC = ('https://learn.microsoft.com/azure/azure-impact-reporting/'
                  'guest-health-impact-categories')
REPORT_DOC = ('https://learn.microsoft.com/azure/azure-impact-reporting/'
              'guest-health-impact-report')
# Azure/azurehpc-health-checks' fault dictionary: its NHC fault codes and
# the category each one is reported as
NHC_DICTIONARY = ('https://github.com/Azure/azurehpc-health-checks/blob/'
                  '40e5333e3020b5abfceb8645af5387d0b363309c/triggerGHR/'
                  'config/nhc_fault_dictionary.cfg')

PREFIX = 'Resource.Hpc.Unhealthy.'
RESET = 'Resource.Hpc.Reset'
REBOOT = 'Resource.Hpc.Reboot'
# Every category of CATEGORIES_DOC's table ("Detailed HPC impact
# categories"), spelled as there: names are case-sensitive
DOCUMENTED = frozenset([RESET, REBOOT] + [PREFIX + name for name in (
    'HpcMissingGpu', 'MissingIB', 'IBPerformance', 'IBPortDown',
    'IBPortFlapping', 'HpcGpuDcgmDiagFailure', 'HpcRowRemapFailure',
    'HpcInforomCorruption', 'HpcGenericFailure', 'ManualInvestigation',
    'XID95UncontainedECCError', 'XID94ContainedECCError',
    'XID79FallenOffBus', 'XID48DoubleBitECC', 'UnhealthyGPUNvidiasmi',
    'NvLink', 'HpcDcgmiThermalReport', 'ECCPageRetirementTableFull',
    'DBEOverLimit', 'GpuXIDError', 'AmdGpuResetFailed', 'EROTFailure',
    'GPUMemoryBWFailure', 'CPUPerformance')])



@dataclass(frozen=True)
class Mapping:
    category: str
    kinds: tuple[str, ...]
    source: str
    #: what the source says, in a few words
    why: str


MAPPINGS = (
    Mapping(PREFIX + 'IBPortDown', ('port_state',),
            f'{NHC_DICTIONARY} (NHC2004)',
            'an InfiniBand port that is not ACTIVE'),
    Mapping(PREFIX + 'IBPortFlapping', ('link_downed', 'link_flaps'),
            f'{NHC_DICTIONARY} (NHC2005)',
            'a link that went down during the test'),
    Mapping(PREFIX + 'IBPerformance',
            ('port_rate', 'PerftestPair', 'PerftestLoopback',
             'OsuPointToPoint', 'OsuPointToPointSpack'),
            f'{NHC_DICTIONARY} (NHC2003)',
            'an InfiniBand port below its rate, or a node that measured '
            'too little bandwidth or too much latency with two partners'),
    Mapping(PREFIX + 'HpcRowRemapFailure',
            ('remapped_rows_failure', 'remapped_rows_pending'),
            f'{NHC_DICTIONARY} (NHC2007)', 'GPU row remapping failed'),
    Mapping(PREFIX + 'XID48DoubleBitECC',
            ('ecc_dbe_volatile', 'ecc_dbe_aggregate'),
            f'{CATEGORIES_DOC} ("GPU reports a double-bit ECC error (Xid '
            '48)")', 'a double-bit ECC error count rose during the test'),
    Mapping(PREFIX + 'NvLink', ('nvlink_inactive',),
            f'{NHC_DICTIONARY} (NHC2016)', 'an NVLink is down'),
    Mapping(PREFIX + 'GpuXIDError', ('xid_error',),
            f'{CATEGORIES_DOC} ("a Xid error other than 48, 79, 94, or 95"; '
            'those four have categories of their own)',
            'the GPU logged an XID of the error class'),
    Mapping(PREFIX + 'HpcMissingGpu', ('GpuInventory',),
            f'{NHC_DICTIONARY} (NHC2009)', 'a GPU the SKU has is missing'),
    Mapping(PREFIX + 'HpcGpuDcgmDiagFailure', ('GpuDiag', 'GpuDiagDaily'),
            f'{NHC_DICTIONARY} (NHC2020)', 'a DCGM diagnostic failed'),
    Mapping(PREFIX + 'NvLink', ('GpuNvlink',),
            f'{NHC_DICTIONARY} (NHC2016)', 'an NVLink is down'),
    Mapping(PREFIX + 'GPUMemoryBWFailure', ('GpuMemoryBandwidth',),
            f'{NHC_DICTIONARY} (NHC2021)',
            'a GPU measured too little memory bandwidth'),
    Mapping(PREFIX + 'CPUPerformance',
            ('StreamCheck', 'StreamMpiCheck', 'StreamSpackCheck',
             'HplCheck', 'HplSpackCheck', 'HpcgCheck', 'HpcgSpackCheck',
             'HpccNode'),
            f'{NHC_DICTIONARY} (NHC2022)',
            'a CPU or memory benchmark below its reference'),
)
# XIDs with a category of their own (CATEGORIES_DOC)
XID_CATEGORIES = {48: PREFIX + 'XID48DoubleBitECC',
                  79: PREFIX + 'XID79FallenOffBus',
                  94: PREFIX + 'XID94ContainedECCError',
                  95: PREFIX + 'XID95UncontainedECCError'}
_BY_KIND = {kind: mapping for mapping in MAPPINGS for kind in mapping.kinds}


def mapping_for(kind: str, value: float | None = None) -> Mapping | None:
    """The mapping of one finding kind (an XID's code picks its own
    category where it has one); None when no category fits."""
    found = _BY_KIND.get(kind)
    if found is not None and kind == 'xid_error' and value is not None \
            and int(value) in XID_CATEGORIES:
        return Mapping(XID_CATEGORIES[int(value)], (kind,), CATEGORIES_DOC,
                       f'XID {int(value)}')
    return found


def unmapped_reason(kind: str) -> str:
    return (f'no Guest Health Reporting category fits {kind!r} '
            f'(the mapping table: scripts/guest_health/categories.py)')
