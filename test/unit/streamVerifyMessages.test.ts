/** How `stream verify` names missing sequence numbers: runs of consecutive ones, a long list cut short. */
import { describeSeqs, runsOf } from '../../src/client/streamCheck';

test('sequence numbers as runs of consecutive ones', () => {
  expect(runsOf([])).toEqual([]);
  expect(runsOf([7])).toEqual([[7, 7]]);
  expect(runsOf([3, 4, 5, 9, 11, 12])).toEqual([[3, 5], [9, 9], [11, 12]]);
});

test('one event, a run, several runs, and more runs than a line names', () => {
  expect(describeSeqs([7])).toBe('event 7');
  expect(describeSeqs([4, 5, 6])).toBe('events 4–6');
  expect(describeSeqs([3, 9, 10])).toBe('events 3, 9–10');
  const everyOther = Array.from({ length: 12 }, (_, i) => 2 * i + 1);
  expect(describeSeqs(everyOther)).toBe('events 1, 3, 5, 7, 9, 11, 13, 15, 17, 19 and 2 more gaps');
});
