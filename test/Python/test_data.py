"""of.utils.data against torch.utils.data: the same batches (values, shapes,
dtypes, structure) wherever PyTorch's are deterministic, PyTorch's
exception types for bad arguments, and for the random parts the properties
that hold whatever the generator (a permutation per epoch, a partition
across ranks) plus reproducibility under of.manual_seed. Workers run in
this process; their batches, worker_init_fn and get_worker_info are
checked against PyTorch's worker processes."""

import collections
import inspect
import io
import time
import warnings

import numpy as np
import pytest

import of
import of.utils.data as od


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


Point = collections.namedtuple("Point", ["x", "y"])


def same(ours, theirs, torch, where="batch"):
    """`ours` (of tensors) is `theirs` (torch tensors): the same structure,
    types, shapes, dtypes and values."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, of.Tensor), f"{where}: {type(ours)} is not an of tensor"
        assert list(ours.shape) == list(theirs.shape), where
        assert ours.dtype.name == str(theirs.dtype).removeprefix("torch."), where
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=where)
    elif isinstance(theirs, dict):
        assert type(ours) is type(theirs) and list(ours) == list(theirs), where
        for k in theirs:
            same(ours[k], theirs[k], torch, f"{where}[{k!r}]")
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs), \
            f"{where}: {type(ours)} vs {type(theirs)}"
        for i, (a, b) in enumerate(zip(ours, theirs)):
            same(a, b, torch, f"{where}[{i}]")
    else:
        assert type(ours) is type(theirs) and ours == theirs, f"{where}: {ours!r} vs {theirs!r}"


def same_batches(ours, theirs, torch):
    ours, theirs = list(ours), list(theirs)
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        same(a, b, torch, f"batch {i}")


class Records:
    """A map-style dataset of plain Python values (no tensor library)."""

    def __init__(self, rng, n=7):
        self.x = rng.standard_normal((n, 3)).astype(np.float32)
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": self.x[i], "label": i % 3, "weight": float(i) / 2, "ok": i % 2 == 0,
                "name": f"item{i}", "pair": (np.float64(i), [i, -i]),
                "point": Point(np.int32(i), self.x[i, :2])}


# --------------------------------------------------------------------------
# Sequential loading: the same batches as PyTorch

@pytest.mark.parametrize("batch_size,drop_last", [(1, False), (3, False), (3, True),
                                                  (4, True), (10, False)])
def test_tensor_dataset_batches_like_torch(rng, torch, batch_size, drop_last):
    x = rng.standard_normal((10, 3)).astype(np.float32)
    y = rng.integers(0, 5, 10)
    ours = od.DataLoader(od.TensorDataset(of.tensor(x), of.tensor(y)), batch_size=batch_size,
                         drop_last=drop_last)
    theirs = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y)),
        batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(theirs)
    same_batches(ours, theirs, torch)
    same_batches(ours, theirs, torch)  # a second epoch


def test_structured_samples_batch_like_torch(rng, torch):
    data = Records(rng)
    for kwargs in [dict(batch_size=3), dict(batch_size=2, drop_last=True),
                   dict(batch_size=None)]:
        ours = od.DataLoader(data, **kwargs)
        theirs = torch.utils.data.DataLoader(data, **kwargs)
        assert len(ours) == len(theirs)
        same_batches(ours, theirs, torch)


def test_default_collate_like_torch(torch):
    tc = torch.utils.data.default_collate
    batches = [[1.0, 2.5], [1, 2], [True, False], [1, 2.5], [True, 2],
               [np.float32(1), np.float32(2)], [np.float64(1), np.float64(2)],
               [np.int32(1), np.int64(2)], [np.bool_(True), np.bool_(False)],
               [np.zeros((2, 3), np.float32), np.ones((2, 3), np.float32)],
               [np.zeros(2, np.float32), np.ones(2, np.float64)],
               [np.float16(1.5)], [np.array(3, np.int8), np.array(4, np.int8)],
               ["a", "b"], [b"a", b"b"], [(1, "a"), (2, "b")], [[1, 2], [3, 4]],
               [{"a": 1, "b": [1.0]}, {"a": 2, "b": [2.0]}], [Point(0, 1.0), Point(2, 3.0)],
               [range(2), range(2)]]
    for batch in batches:
        same(od.default_collate(batch), tc(batch), torch, repr(batch))
    for batch, kind in [([np.zeros(2), np.zeros(3)], RuntimeError),
                        ([[1, 2], [3]], RuntimeError), ([object()], TypeError),
                        ([np.array(["a"])], TypeError), ([1, "a"], TypeError),
                        ([1, None], RuntimeError), ([2 ** 63], ValueError),
                        ([-2 ** 63 - 1], ValueError)]:
        with pytest.raises(kind):
            tc(batch)
        with pytest.raises(kind):
            od.default_collate(batch)


def test_collate_keeps_gradients(torch):
    """Samples that record gradients stay connected to the batch, as
    through torch.stack."""
    a = of.tensor([1.0, 2.0], requires_grad=True)
    b = of.tensor([3.0, 4.0], requires_grad=True)
    batch = od.default_collate([a, b])
    assert batch.requires_grad
    (batch * of.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(b.grad.numpy(), [3.0, 4.0])


def test_default_convert_like_torch(torch):
    tv = torch.utils.data.default_convert
    for value in [3, 2.5, "s", np.float32(3), np.array([1, 2]), (1, np.zeros(2)),
                  [np.zeros(2), 1], {"a": np.ones(2, np.float32)}, Point(np.array(0), 1)]:
        same(od.default_convert(value), tv(value), torch, repr(value))
    text = np.array(["a"])
    assert od.default_convert(text) is text


def test_torch_tensor_samples_become_of_tensors(rng, torch):
    """A dataset written for PyTorch: its torch tensors are copied into of
    tensors (bfloat16 through its bits)."""
    x = torch.tensor(rng.standard_normal((6, 2)).astype(np.float32))
    y = torch.arange(6)
    theirs = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=4)
    ours = od.DataLoader(od.TensorDataset(x, y), batch_size=4)
    same_batches(ours, theirs, torch)
    same(od.default_convert(x), x, torch)
    half = x.to(torch.bfloat16)
    batch = od.default_collate([half[0], half[1]])
    assert batch.dtype is of.bfloat16
    np.testing.assert_array_equal(batch.numpy().astype(np.float32),
                                  half[:2].float().numpy())
    images = [np.full((2, 2), 200, np.uint8), np.full((2, 2), 7, np.uint8)]
    batch = od.default_collate(images)
    same(batch, torch.utils.data.default_collate(images), torch)
    assert batch.dtype is of.uint8
    with pytest.raises(TypeError, match="int16"):
        od.default_collate([np.zeros(2, np.int16)])


def test_dataset_combinators_like_torch(rng, torch):
    tu = torch.utils.data
    a, b = rng.standard_normal((5, 2)).astype(np.float32), rng.standard_normal((3, 2))
    ours_a, ours_b = od.TensorDataset(of.tensor(a)), od.TensorDataset(of.tensor(b))
    theirs_a, theirs_b = tu.TensorDataset(torch.tensor(a)), tu.TensorDataset(torch.tensor(b))
    pairs = [(ours_a + ours_b, theirs_a + theirs_b),
             (od.Subset(ours_a, [4, 0, 2]), tu.Subset(theirs_a, [4, 0, 2])),
             (od.StackDataset(ours_a, ours_a), tu.StackDataset(theirs_a, theirs_a)),
             (od.StackDataset(p=ours_a, q=ours_a), tu.StackDataset(p=theirs_a, q=theirs_a))]
    for ours, theirs in pairs:
        assert len(ours) == len(theirs)
        same_batches(od.DataLoader(ours, batch_size=2), tu.DataLoader(theirs, batch_size=2),
                     torch)
    # a tensor as the dataset: its rows
    same_batches(od.DataLoader(of.tensor(a), batch_size=2),
                 tu.DataLoader(torch.tensor(a), batch_size=2), torch)
    concat = ours_a + ours_b
    assert isinstance(concat, od.ConcatDataset) and concat.cumulative_sizes == [5, 8]
    same(concat[-1], (theirs_a + theirs_b)[-1], torch)
    with pytest.raises(ValueError):
        concat[-9]
    with pytest.raises(AssertionError):
        od.ConcatDataset([])
    with pytest.raises(AssertionError):
        od.TensorDataset(of.zeros(2), of.zeros(3))
    with pytest.raises(NotImplementedError):
        od.Dataset()[0]


class Range(od.IterableDataset):
    """PyTorch's IterableDataset example: range(start, end), sharded by
    worker in __iter__ when `shard`."""

    def __init__(self, start, end, shard=True):
        self.start, self.end, self.shard = start, end, shard

    def __len__(self):
        return self.end - self.start

    def __iter__(self):
        info = od.get_worker_info() or _torch_worker_info()
        if info is None or not self.shard:
            return iter(range(self.start, self.end))
        per_worker = -(-(self.end - self.start) // info.num_workers)
        start = self.start + info.id * per_worker
        return iter(range(start, min(start + per_worker, self.end)))


def _torch_worker_info():
    import sys
    torch = sys.modules.get("torch")
    return torch.utils.data.get_worker_info() if torch is not None else None


def torch_range(torch, start, end, shard=True):
    """The same dataset as a torch IterableDataset."""
    class TorchRange(torch.utils.data.IterableDataset):
        __iter__ = Range.__iter__
        __len__ = Range.__len__
    ds = TorchRange()
    ds.start, ds.end, ds.shard = start, end, shard
    return ds


def test_iterable_dataset_like_torch(torch):
    tu = torch.utils.data
    for kwargs in [dict(batch_size=2), dict(batch_size=2, drop_last=True),
                   dict(batch_size=None)]:
        ours = od.DataLoader(Range(3, 10), **kwargs)
        theirs = tu.DataLoader(torch_range(torch, 3, 10), **kwargs)
        assert len(ours) == len(theirs)
        same_batches(ours, theirs, torch)
    chained = Range(0, 2) + Range(5, 7)
    assert isinstance(chained, od.ChainDataset) and list(chained) == [0, 1, 5, 6]
    for lib, data in [(od, Range(0, 5)), (tu, torch_range(torch, 0, 5))]:
        loader = lib.DataLoader(data, batch_size=None)
        assert len(loader) == 5
        data.end = 7  # the stream grew: more than len() said
        with pytest.warns(UserWarning, match="was reported to be 5"):
            assert len(list(loader)) == 7


# --------------------------------------------------------------------------
# Workers: in this process, with PyTorch's batches and semantics

def _worker_ids(worker_id):
    """A worker_init_fn that records the worker in its dataset copy."""
    info = od.get_worker_info() or _torch_worker_info()
    assert info.id == worker_id
    info.dataset.init_id = worker_id


class WhoLoads:
    """dataset[i] = (i, the loading worker's id, its init id, num_workers)."""

    init_id = -1

    def __len__(self):
        return 9

    def __getitem__(self, i):
        info = od.get_worker_info() or _torch_worker_info()
        if info is None:
            return (i, -1, self.init_id, 0)
        return (i, info.id, self.init_id, info.num_workers)


@pytest.mark.filterwarnings("ignore:This DataLoader will create")
def test_map_workers_like_torch(torch):
    tu = torch.utils.data
    for kwargs in [dict(batch_size=2, num_workers=2),
                   dict(batch_size=2, num_workers=3, worker_init_fn=_worker_ids),
                   dict(batch_size=4, num_workers=2, persistent_workers=True,
                        worker_init_fn=_worker_ids),
                   dict(batch_size=2, num_workers=0)]:
        ours = od.DataLoader(WhoLoads(), **kwargs)
        theirs = tu.DataLoader(WhoLoads(), multiprocessing_context="fork", timeout=60,
                               **kwargs) if kwargs["num_workers"] else tu.DataLoader(
                                   WhoLoads(), **kwargs)
        for _ in range(2):
            same_batches(ours, theirs, torch)
    assert od.get_worker_info() is None


def _shard(worker_id):
    """PyTorch's example 2: worker_init_fn shards the worker's copy."""
    info = od.get_worker_info() or _torch_worker_info()
    ds = info.dataset
    per_worker = -(-(ds.end - ds.start) // info.num_workers)
    ds.start = ds.start + worker_id * per_worker
    ds.end = min(ds.start + per_worker, ds.end)


@pytest.mark.filterwarnings("ignore:This DataLoader will create")
@pytest.mark.filterwarnings("ignore:Length of IterableDataset")
def test_iterable_workers_like_torch(torch):
    """Each worker iterates its own copy of the dataset; batches come from
    the workers in turn, and an exhausted worker drops out: duplicates
    without sharding, PyTorch's interleaving with it."""
    tu = torch.utils.data
    cases = [((3, 7, False), dict(num_workers=2, batch_size=None)),          # duplicated
             ((3, 7, True), dict(num_workers=2, batch_size=None)),           # [3, 5, 4, 6]
             ((3, 7, True), dict(num_workers=5, batch_size=None)),
             ((0, 11, True), dict(num_workers=3, batch_size=2)),             # uneven shards
             ((0, 11, True), dict(num_workers=3, batch_size=2, drop_last=True)),
             ((3, 7, False), dict(num_workers=2, batch_size=1, worker_init_fn=_shard)),
             ((0, 9, True), dict(num_workers=2, batch_size=3, persistent_workers=True))]
    for (start, end, shard), kwargs in cases:
        ours = od.DataLoader(Range(start, end, shard), **kwargs)
        theirs = tu.DataLoader(torch_range(torch, start, end, shard),
                               multiprocessing_context="fork", timeout=60, **kwargs)
        for _ in range(2):
            same_batches(ours, theirs, torch)
    assert [int(b) for b in od.DataLoader(Range(3, 7), num_workers=2, batch_size=None)] == \
        [3, 5, 4, 6]


class Noisy:
    """Samples drawn from NumPy's, Python's and of's global generators."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        import random
        return np.array([np.random.rand(), random.random(), of.rand(1).item()])


def _reseed(worker_id):
    np.random.seed(1234)


def test_workers_have_their_own_random_state(torch):
    """As in PyTorch's worker processes, loading neither reads nor moves the
    main process's generators (beyond one seed per epoch drawn from of's),
    worker_init_fn's seeding stays in the worker, and workers are seeded
    from that epoch seed: the same data under the same of.manual_seed."""
    import random
    np.random.seed(5)
    random.seed(5)
    main_np, main_py = np.random.get_state()[1].copy(), random.getstate()
    epochs = []
    for _ in range(2):
        of.manual_seed(7)
        loader = od.DataLoader(Noisy(), batch_size=2, num_workers=2, worker_init_fn=_reseed)
        epochs.append(np.concatenate([b.numpy() for b in loader]))
        after_loading = of.rand(3).numpy()
        of.manual_seed(7)
        od.DataLoader(Noisy(), num_workers=2).__iter__()  # draws its one seed
        np.testing.assert_array_equal(after_loading, of.rand(3).numpy())
    np.testing.assert_array_equal(epochs[0], epochs[1])
    np.testing.assert_array_equal(np.random.get_state()[1], main_np)
    assert random.getstate() == main_py
    # the two workers' streams differ (seeded base_seed + id), and with
    # _reseed both workers' NumPy draws are the same
    batch0, batch1 = epochs[0][:2], epochs[0][2:]
    np.testing.assert_array_equal(batch0[:, 0], batch1[:, 0])
    assert not np.array_equal(batch0[:, 1], batch1[:, 1])


def test_numpy_worker_seed_is_torchs(torch):
    from torch.utils.data._utils.worker import _generate_state
    from of.utils.data._worker import _numpy_seed
    for base, worker in [(0, 0), (123456789012345, 3), (2 ** 62 + 11, 7)]:
        assert _numpy_seed(base, worker) == _generate_state(base, worker)


class Slow:
    def __len__(self):
        return 2

    def __getitem__(self, i):
        time.sleep(0.3)
        return i


def test_timeout(torch):
    for lib in (od, torch.utils.data):
        with pytest.raises(AssertionError):
            iter(lib.DataLoader(Slow(), timeout=5))
    with pytest.raises(RuntimeError, match="timed out after 0.1 seconds"):
        list(od.DataLoader(Slow(), num_workers=1, timeout=0.1))
    assert len(list(od.DataLoader(Slow(), num_workers=1, timeout=5))) == 2


# --------------------------------------------------------------------------
# Randomness: of's generator, reproducible

def epoch_indices(loader):
    return [i for batch in loader for i in batch.tolist()]


def test_shuffle_is_a_reproducible_permutation_per_epoch():
    data = list(range(23))
    loader = od.DataLoader(data, batch_size=4, shuffle=True)
    runs = []
    for _ in range(2):
        of.manual_seed(3)
        epochs = [epoch_indices(loader) for _ in range(3)]
        for epoch in epochs:
            assert sorted(epoch) == data
        assert epochs[0] != epochs[1]
        runs.append(epochs)
    assert runs[0] == runs[1]
    of.manual_seed(4)
    assert epoch_indices(loader) != runs[0][0]
    assert len(loader) == 6


def test_random_samplers():
    of.manual_seed(0)
    s = od.RandomSampler(range(5), num_samples=12)
    drawn = list(s)
    assert len(drawn) == len(s) == 12
    assert sorted(drawn[:5]) == sorted(drawn[5:10]) == list(range(5))
    assert len(set(drawn[10:])) == 2
    r = od.RandomSampler(range(5), replacement=True, num_samples=50)
    assert len(list(r)) == 50 and set(r) <= set(range(5))
    # drawn lazily, as PyTorch (minGPT's trainer asks for 1e10 samples)
    huge = iter(od.RandomSampler(range(5), replacement=True, num_samples=int(1e10)))
    assert 0 <= next(huge) < 5
    sub = od.SubsetRandomSampler([10, 20, 30])
    assert sorted(sub) == [10, 20, 30] and len(sub) == 3
    w = od.WeightedRandomSampler([0.0, 1.0, 0.0, 2.0], 30)
    assert set(w) <= {1, 3} and len(w) == 30
    assert sorted(od.WeightedRandomSampler(of.tensor([1.0, 5.0, 2.0]), 3,
                                           replacement=False)) == [0, 1, 2]
    # without replacement, zero weights come after the others (torch.multinomial's)
    for _ in range(5):
        drawn = list(od.WeightedRandomSampler([0.0, 1.0, 0.0, 2.0, 0.0], 5, replacement=False))
        assert sorted(drawn[:2]) == [1, 3] and sorted(drawn[2:]) == [0, 2, 4]
    of.manual_seed(9)
    first = (list(s), list(r), list(sub), list(w))
    of.manual_seed(9)
    assert (list(s), list(r), list(sub), list(w)) == first


def test_random_sampler_errors_like_torch(torch):
    tu = torch.utils.data
    for lib in (od, tu):
        with pytest.raises(TypeError):
            lib.RandomSampler(range(3), replacement=1)
        with pytest.raises(ValueError):
            lib.RandomSampler(range(3), num_samples=0)
        with pytest.raises(ValueError):
            lib.WeightedRandomSampler([1.0], 0)
        with pytest.raises(ValueError):
            lib.WeightedRandomSampler([1.0], 1, replacement=0)
        with pytest.raises(ValueError):
            lib.WeightedRandomSampler([[1.0]], 1)
        for weights, n, replacement in [([1.0, 0.0], 3, False), ([1.0, -1.0], 2, True),
                                        ([0.0, 0.0], 1, True), ([1.0, np.nan], 1, True)]:
            with pytest.raises(RuntimeError):
                list(lib.WeightedRandomSampler(weights, n, replacement=replacement))
        with pytest.raises(ValueError):
            lib.BatchSampler(range(3), 0, False)
        with pytest.raises(ValueError):
            lib.BatchSampler(range(3), 2, None)


def test_batch_sampler_like_torch(torch):
    for batch_size, drop_last in [(3, False), (3, True), (5, True), (1, False)]:
        ours = od.BatchSampler(od.SequentialSampler(range(10)), batch_size, drop_last)
        theirs = torch.utils.data.BatchSampler(range(10), batch_size, drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
    batches = [[3, 1], [0], [2, 4]]
    ours = od.DataLoader(list("abcde"), batch_sampler=batches)
    theirs = torch.utils.data.DataLoader(list("abcde"), batch_sampler=batches)
    assert list(ours) == list(theirs) and len(ours) == 3


@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True), (9, 3, False),
                                                  (2, 4, False), (11, 2, True)])
def test_distributed_sampler_like_torch(torch, n, replicas, drop_last):
    data = list(range(n))
    ours = [od.DistributedSampler(data, replicas, r, shuffle=False, drop_last=drop_last)
            for r in range(replicas)]
    theirs = [torch.utils.data.DistributedSampler(data, replicas, r, shuffle=False,
                                                  drop_last=drop_last)
              for r in range(replicas)]
    for o, t in zip(ours, theirs):
        assert list(o) == list(t) and len(o) == len(t)
    for epoch in (0, 1):
        shuffled = [od.DistributedSampler(data, replicas, r, seed=5, drop_last=drop_last)
                    for r in range(replicas)]
        for s in shuffled:
            s.set_epoch(epoch)
        parts = [list(s) for s in shuffled]
        assert [len(p) for p in parts] == [len(t) for t in theirs]
        union = [i for p in parts for i in p]
        if drop_last:  # a partition of part of the dataset
            assert len(set(union)) == len(union)
        else:  # every index, some twice (the padding)
            assert set(union) == set(data)
        assert parts == [list(s) for s in shuffled]  # seed + epoch decide it
    first = list(od.DistributedSampler(data, replicas, 0, seed=5))
    later = od.DistributedSampler(data, replicas, 0, seed=5)
    later.set_epoch(1)
    assert n < 4 or list(later) != first


def test_distributed_sampler_defaults_and_errors(torch):
    s = od.DistributedSampler(list(range(5)))
    assert (s.num_replicas, s.rank) == (of.env.world_size(), of.env.rank())
    for lib in (od, torch.utils.data):
        with pytest.raises(ValueError, match="Invalid rank 3"):
            lib.DistributedSampler(list(range(5)), num_replicas=3, rank=3)


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.7], [0.34, 0.33, 0.33], [0.5, 0.5],
                                     [10, 0]])
def test_random_split_like_torch(torch, lengths):
    data = list(range(10))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        of.manual_seed(1)
        ours = od.random_split(data, lengths)
        theirs = torch.utils.data.random_split(data, lengths)
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    assert sorted(i for s in ours for i in s) == data
    of.manual_seed(1)
    assert [list(s) for s in od.random_split(data, lengths)] == [list(s) for s in ours]


def test_random_split_errors_like_torch(torch):
    for lib in (od, torch.utils.data):
        with pytest.raises(ValueError, match="Sum of input lengths"):
            lib.random_split(list(range(10)), [3, 3])
        with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
            lib.random_split(list(range(1)), [0.5, 0.5])


def test_generators_are_refused():
    """of.Generator cannot be made; any other generator would be ignored,
    so it is refused, naming the API."""
    g = np.random.default_rng(0)
    for call in [lambda: od.DataLoader([1], generator=g),
                 lambda: od.DataLoader([1], shuffle=True, generator=g),
                 lambda: od.RandomSampler([1], generator=g),
                 lambda: od.SubsetRandomSampler([1], generator=g),
                 lambda: od.WeightedRandomSampler([1.0], 1, generator=g),
                 lambda: od.random_split([1, 2], [1, 1], generator=g)]:
        with pytest.raises(NotImplementedError, match=r"\(generator="):
            call()


# --------------------------------------------------------------------------
# Arguments: PyTorch's errors

class MapData:
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return i


def test_loader_argument_errors_like_torch(torch):
    tu = torch.utils.data
    cases = [dict(batch_sampler=[[0]], batch_size=2), dict(batch_sampler=[[0]], shuffle=True),
             dict(batch_sampler=[[0]], sampler=[0]), dict(batch_sampler=[[0]], drop_last=True),
             dict(sampler=[0, 1], shuffle=True), dict(batch_size=None, drop_last=True),
             dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2),
             dict(num_workers=1, prefetch_factor=-1), dict(persistent_workers=True),
             dict(multiprocessing_context="fork"),
             dict(num_workers=1, multiprocessing_context="no-such-method"),
             dict(num_workers=1, multiprocessing_context=3), dict(batch_size=0)]
    for kwargs in cases:
        with pytest.raises(Exception) as theirs:
            tu.DataLoader(MapData(), **kwargs)
        with pytest.raises(Exception) as ours:
            od.DataLoader(MapData(), **kwargs)
        assert type(ours.value) is type(theirs.value), kwargs
        assert str(ours.value).split()[:3] == str(theirs.value).split()[:3], kwargs
    for kwargs in [dict(shuffle=True), dict(sampler=[0]), dict(batch_sampler=[[0]])]:
        with pytest.raises(ValueError, match="IterableDataset: expected unspecified"):
            tu.DataLoader(torch_range(torch, 0, 3), **kwargs)
        with pytest.raises(ValueError, match="IterableDataset: expected unspecified"):
            od.DataLoader(Range(0, 3), **kwargs)
    for lib in (tu, od):
        loader = lib.DataLoader(MapData(), num_workers=1, multiprocessing_context="spawn",
                                prefetch_factor=4, pin_memory=True, in_order=False)
        for attr in ("batch_size", "sampler", "dataset", "drop_last"):
            with pytest.raises(ValueError, match="should not be set after"):
                setattr(loader, attr, None)
        loader.num_workers = 1  # others may change
    assert [b.tolist() for b in loader] == [[0], [1], [2], [3]]  # of's, in this process


def test_signatures_are_torchs(torch):
    """Every callable both have takes PyTorch's parameters: the same names,
    kinds and defaults (generator's default is None: of's generator)."""
    compared = 0
    for name in od.__all__:
        theirs = getattr(torch.utils.data, name, None)
        if theirs is None or not callable(theirs):
            continue
        ours = getattr(od, name)
        if inspect.isclass(ours) and getattr(ours, "__dataclass_fields__", None):
            continue  # WorkerInfo: compared by its fields below
        a = inspect.signature(ours.__init__ if inspect.isclass(ours) else ours)
        b = inspect.signature(theirs.__init__ if inspect.isclass(theirs) else theirs)
        rows = [(p.name, p.kind, p.default if p.name != "generator" else None)
                for p in b.parameters.values()]
        assert [(p.name, p.kind, p.default) for p in a.parameters.values()] == rows, name
        compared += 1
    assert compared >= 18
    assert list(od.WorkerInfo.__dataclass_fields__)[:4] == ["id", "num_workers", "seed",
                                                            "dataset"]


def test_datapipes_are_refused():
    with pytest.raises(NotImplementedError, match="DataPipes"):
        od.IterDataPipe
    with pytest.raises(AttributeError):
        od.NoSuchThing


# --------------------------------------------------------------------------
# End to end, and of.utils beside it

def test_loader_feeds_a_linear_layer(rng):
    x = rng.standard_normal((20, 6)).astype(np.float32)
    y = rng.standard_normal((20, 2)).astype(np.float32)
    model = of.nn.Linear(6, 2)
    w, b = model.weight.numpy(), model.bias.numpy()
    loader = od.DataLoader(od.TensorDataset(of.tensor(x), of.tensor(y)), batch_size=8,
                           shuffle=True)
    of.manual_seed(2)
    seen = []
    for xb, yb in loader:
        assert isinstance(xb, of.Tensor) and xb.dtype is of.float32
        out = model(xb)
        np.testing.assert_allclose(out.numpy(), xb.numpy() @ w.T + b, rtol=1e-5, atol=1e-5)
        loss = of.nn.functional.mse_loss(out, yb)
        assert np.isfinite(loss.item())
        rows = [int(np.flatnonzero((x == r).all(1))[0]) for r in xb.numpy()]
        np.testing.assert_array_equal(yb.numpy(), y[rows])
        seen += rows
    assert sorted(seen) == list(range(20))


def test_progress_is_still_of_utils():
    out = io.StringIO()
    progress = of.utils.Progress(4, every=2, file=out, desc="t")
    for _ in progress:
        progress.update(loss=0.5)
    assert "t step 4/4" in out.getvalue() and of.utils.data is od
