"""The READMEs are pages a newcomer reads: the top one short, a README
beside the code it explains, one idea per sentence, every link leading
somewhere, and timing figures only in the benchmarks' README."""
import re

import pytest

from tests.support import readmes
from tests.support.helpers import REPO

TOP = REPO / 'README.md'
TOP_MAX_LINES = 300
# One idea per sentence: 40 words holds any sentence of the READMEs as
# written, with a code span or a link counted as one word.
MAX_SENTENCE_WORDS = 40
FOLDER_READMES = ('checks', 'config', 'config/results', 'scripts/acceptance',
                  'scripts/query', 'tests', 'tests/bench')


def relative(path):
    return str(path.relative_to(REPO))


def test_the_top_readme_is_short():
    assert len(TOP.read_text().splitlines()) <= TOP_MAX_LINES


def test_each_folder_has_its_readme_and_the_top_one_links_it():
    top = TOP.read_text()
    for folder in FOLDER_READMES:
        assert (REPO / folder / 'README.md').is_file(), folder
        assert f'({folder}/README.md)' in top, folder


@pytest.mark.parametrize('path', readmes.readme_paths(), ids=relative)
def test_no_sentence_is_longer_than_the_limit(path):
    long = [f'{readmes.word_count(sentence)} words: {sentence}'
            for sentence in readmes.sentences(path.read_text())
            if readmes.word_count(sentence) > MAX_SENTENCE_WORDS]
    assert not long, '\n'.join(long)


@pytest.mark.parametrize('path', [path for path in readmes.readme_paths()
                                  if path != readmes.BENCH_README],
                         ids=relative)
def test_no_timing_figure_outside_the_benchmarks_readme(path):
    assert readmes.durations(path.read_text()) == []


@pytest.mark.parametrize('path', readmes.readme_paths(), ids=relative)
def test_every_relative_link_leads_to_a_file(path):
    targets = re.findall(r'\]\(([^)#\s]+)(?:#[^)]*)?\)', path.read_text())
    missing = [target for target in targets if '://' not in target
               and not (path.parent / target).exists()]
    assert not missing


def test_the_sentences_are_found_as_a_reader_reads_them():
    text = ('# Title\n\nOne `code span with words` counts once. Two [a '
            'link](x.md) too.\n\n- an item\n- another item. With two.\n\n'
            '| a | b |\n|---|---|\n| one cell | other cell |\n\n```sh\n'
            'not prose at all\n```\n')
    assert readmes.sentences(text) == [
        'One CODE counts once.', 'Two a link too.', '- an item',
        '- another item.', 'With two.', 'a', 'b', 'one cell', 'other cell']
    assert readmes.word_count('One CODE counts once.') == 4


def test_durations_are_found_in_prose_not_in_code_or_quotations():
    text = ('It took 0.27 s and ~1 s, then 12–14 s or 3 minutes.\n'
            'A setting: `CLUSTERPROOF_PROGRESS_S` (default `60`), '
            '`-D 300`.\nThe post says "as low as 1.25 µs".\n'
            '400 Gb/s and 90 days are no durations.\n'
            'A tool says it takes 2 minutes ([its guide](https://x.org/a)).\n')
    assert readmes.durations(text) == ['0.27 s', '~1 s', '12–14 s',
                                       '3 minutes']


def tier_times(text):
    return re.findall(r'^\| (fast|everything) \| .* \| (.+) \|$', text, re.M)


def test_the_tier_times_are_the_benchmarks_figures():
    quoted = readmes.QUOTED_FIGURES.search(TOP.read_text()).group(0)
    measured = dict(tier_times(readmes.BENCH_README.read_text()))
    stated = dict(tier_times(quoted))
    assert stated.keys() == {'fast', 'everything'}
    assert stated == {tier: measured[tier] for tier in stated}
