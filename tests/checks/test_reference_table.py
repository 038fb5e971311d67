"""checks/README.md's table of reference keys per Azure partition is what a dry
run of today's checks looks up (scripts/reference_table.py)."""
from scripts import reference_table
from tests.support.helpers import REPO


def test_readme_table_is_current(tmp_path):
    section = reference_table.generate()
    readme = (REPO / 'checks' / 'README.md').read_text()
    assert section in readme, (
        'checks/README.md reference-key table is stale: run '
        '.venv/bin/python -m scripts.reference_table --write')
    # every Azure partition, and keys of every reference family
    for partition in ('hbv3', 'hbv4', 'hbv5', 'hx', 'ndv4', 'ndv5',
                      'ndh200v5', 'ndgb200v6', 'ndgb300v6'):
        assert f'<code>azure:{partition}</code>' in section
    for check in ('StreamCheck', 'PerftestLoopback', 'NcclSingleNode',
                  'OsuCollective', 'HplCheck', 'HpcgCheck', 'HpccNode',
                  'IorCheck', 'MpiStageCheck'):
        assert f'| {check}' in section, check
    # what it shows: HBv4's STREAM judged by the health checks' method
    assert ('| StreamCheck | add_bw, copy_bw, scale_bw, triad_bw | '
            'HB176rs_v4 | `array_size=400000000,ntimes=20,places=list48-'
            in section)


def test_the_section_is_replaced_between_its_markers():
    text = f'a\n{reference_table.BEGIN}\nold\n{reference_table.END}\nb\n'
    new = f'{reference_table.BEGIN}\nnew\n{reference_table.END}'
    assert reference_table.replace_section(text, new) == f'a\n{new}\nb\n'
