"""Small imaging recordings in the layouts roiextractors reads: ScanImage, Thor, Bruker and
Micro-Manager, written for the bridge checks (``bridge_checks_imaging.py``).

ScanImage and Micro-Manager keep metadata in a block between the TIFF header and the first IFD,
which tifffile does not write, so :func:`write_raw_tiff` writes those files itself: uncompressed,
little-endian, one strip per page. The XML and JSON beside the TIFF files hold what roiextractors
and NeuroConv read from them, no more.
"""

from __future__ import annotations

import datetime
import json
import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = [
    "write_bruker",
    "write_micromanager",
    "write_raw_tiff",
    "write_scanimage",
    "write_thor",
]

START = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)

# TIFF tag codes and field types used below.
_ASCII, _SHORT, _LONG, _LONG8 = 2, 3, 4, 16
_SAMPLE_FORMAT = {"u": 1, "i": 2, "f": 3}


def write_raw_tiff(
    path: Path,
    pages: np.ndarray,
    *,
    bigtiff: bool,
    after_header: bytes = b"",
    descriptions: Sequence[str] | None = None,
    software: str | None = None,
    extra_ascii_tags: dict[int, str] | None = None,
) -> None:
    """Pages (page, row, column) as an uncompressed TIFF with ``after_header`` right after the
    TIFF header (where ScanImage and Micro-Manager put their metadata)."""
    pages = np.ascontiguousarray(pages)
    dtype = pages.dtype.newbyteorder("<")
    head = 16 if bigtiff else 8
    out = bytearray(head) + after_header
    first_ifd_slot = 8 if bigtiff else 4
    next_slot = first_ifd_slot
    for index, page in enumerate(pages):
        _pad(out)
        _put_offset(out, next_slot, len(out), bigtiff)
        rows, columns = page.shape
        ascii_tags = dict(extra_ascii_tags or {}) if index == 0 else {}
        if descriptions is not None:
            ascii_tags[270] = descriptions[index]
        if software is not None:
            ascii_tags[305] = software
        numeric = {
            256: (_LONG, columns),
            257: (_LONG, rows),
            258: (_SHORT, dtype.itemsize * 8),
            259: (_SHORT, 1),
            262: (_SHORT, 1),
            273: (_LONG8 if bigtiff else _LONG, 0),  # strip offset, set below
            277: (_SHORT, 1),
            278: (_LONG, rows),
            279: (_LONG, page.nbytes),
            339: (_SHORT, _SAMPLE_FORMAT[dtype.kind]),
        }
        texts = {tag: text.encode() + b"\0" for tag, text in ascii_tags.items()}
        tags = sorted([*numeric, *texts])
        entry = 20 if bigtiff else 12
        count_size, next_size = (8, 8) if bigtiff else (2, 4)
        ifd_start = len(out)
        values_start = ifd_start + count_size + len(tags) * entry + next_size
        values = bytearray()
        text_offsets = {}
        for tag in sorted(texts):
            text_offsets[tag] = values_start + len(values)
            values += texts[tag]
            if len(values) % 2:
                values += b"\0"
        data_offset = values_start + len(values)
        data_offset += -data_offset % 16
        ifd = bytearray(struct.pack("<Q" if bigtiff else "<H", len(tags)))
        for tag in tags:
            if tag in texts:
                kind, count, value = _ASCII, len(texts[tag]), text_offsets[tag]
            else:
                kind, value = numeric[tag]
                count = 1
                if tag == 273:
                    value = data_offset
            ifd += _entry(tag, kind, count, value, bigtiff)
        next_slot = len(out) + len(ifd)
        ifd += bytes(next_size)
        out += ifd + values
        out += bytes(data_offset - len(out))
        out += page.astype(dtype).tobytes()
    header = (
        b"II" + struct.pack("<HHHQ", 43, 8, 0, 0) if bigtiff else b"II" + struct.pack("<HI", 42, 0)
    )
    out[: len(header)] = header
    # The header's first-IFD slot was written before the header itself: write it again.
    _put_offset(out, first_ifd_slot, _first_ifd(after_header, head), bigtiff)
    Path(path).write_bytes(bytes(out))


def _first_ifd(after_header: bytes, head: int) -> int:
    end = head + len(after_header)
    return end + (end % 2)


def _pad(out: bytearray) -> None:
    if len(out) % 2:
        out += b"\0"


def _put_offset(out: bytearray, slot: int, value: int, bigtiff: bool) -> None:
    if bigtiff:
        out[slot : slot + 8] = struct.pack("<Q", value)
    else:
        out[slot : slot + 4] = struct.pack("<I", value)


def _entry(tag: int, kind: int, count: int, value: int, bigtiff: bool) -> bytes:
    if bigtiff:
        fmt = {_SHORT: "<HHQHxxxxxx", _LONG: "<HHQIxxxx", _LONG8: "<HHQQ", _ASCII: "<HHQQ"}
        return struct.pack(fmt[kind], tag, kind, count, value)
    fmt = {_SHORT: "<HHIHxx", _LONG: "<HHII", _ASCII: "<HHII"}
    return struct.pack(fmt[kind], tag, kind, count, value)


# -- ScanImage -----------------------------------------------------------------------------------


def write_scanimage(
    path: Path,
    ifds: np.ndarray,
    *,
    channels: int = 1,
    planes: int = 1,
    flyback: int = 0,
    frames_per_slice: int = 1,
    frames_per_file: int | None = None,
    frame_rate: float = 30.0,
) -> Path:
    """A ScanImage (2020+, header version 3) BigTIFF holding ``ifds`` in acquisition order:
    channel fastest, then the frames of one slice, then plane, flyback frames, then volume.

    ``frames_per_file`` says the acquisition was split into files of that many frames (named
    ``<base>_<acquisition>_<file>.tif``, which roiextractors then looks for).
    """
    volumetric = planes > 1
    per_volume = planes * frames_per_slice
    channel_save = "[" + " ".join(str(c + 1) for c in range(channels)) + "]"
    if channels == 1:
        channel_save = "1"
    frame_data = "\n".join(
        [
            "SI.VERSION_MAJOR = 2020",
            "SI.VERSION_MINOR = 1",
            "SI.VERSION_UPDATE = 0",
            "SI.acqState = 'grab'",
            "SI.hChannels.channelName = {'Channel 1' 'Channel 2' 'Channel 3' 'Channel 4'}",
            f"SI.hChannels.channelSave = {channel_save}",
            f"SI.hRoiManager.scanFrameRate = {frame_rate}",
            f"SI.hRoiManager.scanVolumeRate = {frame_rate / (planes + flyback)}",
            "SI.hRoiManager.linePeriod = 4.1e-05",
            f"SI.hScan2D.logFramesPerFile = {frames_per_file or 'Inf'}",
            f"SI.hStackManager.enable = {'true' if volumetric else 'false'}",
            f"SI.hStackManager.framesPerSlice = {frames_per_slice}",
            f"SI.hStackManager.numSlices = {planes}",
            f"SI.hStackManager.numFramesPerVolume = {per_volume}",
            f"SI.hStackManager.numFramesPerVolumeWithFlyback = {per_volume + flyback}",
            "SI.hStackManager.stackMode = 'fast'",
        ]
    )
    rows, columns = ifds.shape[1:]
    rois = {
        "RoiGroups": {
            "imagingRoiGroup": {
                "rois": {
                    "scanfields": {
                        "sizeXY": [columns * 2.0, rows * 2.0],
                        "pixelResolutionXY": [columns, rows],
                        "centerXY": [1.5, -2.5],
                    }
                }
            }
        }
    }
    frame_bytes = frame_data.encode() + b"\0"
    roi_bytes = json.dumps(rois).encode() + b"\0"
    header = struct.pack("<IIII", 0x07030301, 3, len(frame_bytes), len(roi_bytes))
    epoch = "[2026 1 2 3 4 5.000]"
    descriptions = [
        f"frameNumbers = {k + 1}\nframeTimestamps_sec = {k / frame_rate:.6f}\nepoch = {epoch}\n"
        for k in range(len(ifds))
    ]
    write_raw_tiff(
        path,
        ifds,
        bigtiff=True,
        after_header=header + frame_bytes + roi_bytes,
        descriptions=descriptions,
        software=frame_data,
    )
    return path


# -- Thor ----------------------------------------------------------------------------------------


def write_thor(
    folder: Path,
    frames: np.ndarray,
    *,
    frame_rate: float = 15.0,
    byteorder: str = "<",
    tile: tuple[int, int] | None = None,
) -> Path:
    """A ThorImageLS export: one OME-TIFF of (time, row, column), or (time, channel, row,
    column) for channels ChanA, ChanB, ..., and Experiment.xml."""
    import tifffile

    folder.mkdir(parents=True, exist_ok=True)
    rows, columns = frames.shape[-2:]
    channels = 1 if frames.ndim == 3 else frames.shape[1]
    path = folder / "ChanA_001_001_001_001.tif"
    tifffile.imwrite(
        path,
        frames,
        ome=True,
        photometric="minisblack",
        metadata={"axes": "TYX" if channels == 1 else "TCYX"},
        byteorder=byteorder,
        tile=tile,
    )
    wavelengths = "".join(
        f'    <Wavelength name="Chan{"ABCD"[c]}" exposureTimeMS="0" />\n' for c in range(channels)
    )
    (folder / "Experiment.xml").write_text(
        "<?xml version='1.0'?>\n<ThorImageExperiment>\n"
        '  <Software version="4.3.2023.1" />\n'
        f'  <Date date="01/02/2026 03:04:05" uTime="{int(START.timestamp())}" />\n'
        f'  <LSM pixelX="{columns}" pixelY="{rows}" frameRate="{frame_rate}" pixelSizeUM="0.5"'
        f' widthUM="{columns * 0.5}" heightUM="{rows * 0.5}" />\n'
        f"  <Wavelengths>\n{wavelengths}  </Wavelengths>\n</ThorImageExperiment>\n"
    )
    return path


# -- Bruker --------------------------------------------------------------------------------------


def write_bruker(
    folder: Path,
    frames: np.ndarray,
    *,
    planes: int = 1,
    period: float = 0.0625,
    compression: str | None = None,
    multipage: bool = False,
) -> Path:
    """A Prairie View 5.6 series and the folder's XML; ``frames`` is (frame, row, column) of
    channel 2, or (frame, channel, row, column) of channels 1, 2, ...

    One single-page OME-TIFF per frame and channel, or (``multipage``, one plane only) one
    OME-TIFF per channel holding every frame. ``planes`` == 1: a T-series, one Sequence holding
    every frame; otherwise a Z-series, one Sequence (cycle) per volume whose Frames are planes.
    """
    import tifffile

    folder.mkdir(parents=True, exist_ok=True)
    name = folder.name
    if frames.ndim == 3:
        frames, channel_numbers = frames[:, None], [2]
    else:
        channel_numbers = list(range(1, frames.shape[1] + 1))
    if multipage and planes != 1:
        raise ValueError("multi-page Bruker files of volumes are not written here")
    options = {"photometric": "minisblack", "compression": compression}
    if multipage:
        for c, number in enumerate(channel_numbers):
            tifffile.imwrite(
                folder / f"{name}_Cycle00001_Ch{number}.ome.tif", frames[:, c], **options
            )
    per_sequence = len(frames) if planes == 1 else planes
    kind = "TSeries Timed Element" if planes == 1 else "TSeries ZSeries Element"
    sequences = []
    for cycle in range(len(frames) // per_sequence):
        elements = []
        for position in range(per_sequence):
            index = cycle * per_sequence + position
            file_elements = []
            for c, number in enumerate(channel_numbers):
                if multipage:
                    file_name, page = f"{name}_Cycle00001_Ch{number}.ome.tif", index + 1
                else:
                    file_name = f"{name}_Cycle{cycle + 1:05d}_Ch{number}_{position + 1:06d}.ome.tif"
                    page = 1
                    tifffile.imwrite(folder / file_name, frames[index, c], **options)
                file_elements.append(
                    f'      <File channel="{number}" channelName="Ch{number}" page="{page}"'
                    f' filename="{file_name}" />\n'
                )
            time = index * period
            # A volume's frames each say where the focus (Z) was.
            depth = "" if planes == 1 else _z_position(30.0 + 5.0 * position)
            elements.append(
                f'    <Frame relativeTime="{time}" absoluteTime="{time + 1.0}"'
                f' index="{position + 1}">\n' + "".join(file_elements) + f"{depth}    </Frame>"
            )
        sequences.append(
            f'  <Sequence type="{kind}" cycle="{cycle + 1}" time="03:04:05.0">\n'
            + "\n".join(elements)
            + "\n  </Sequence>"
        )
    rows, columns = frames.shape[2:]
    state = "\n".join(
        [
            "  <PVStateShard>",
            f'    <PVStateValue key="framePeriod" value="{period}" />',
            f'    <PVStateValue key="scanLinePeriod" value="{period / rows}" />',
            f'    <PVStateValue key="linesPerFrame" value="{rows}" />',
            f'    <PVStateValue key="pixelsPerLine" value="{columns}" />',
            '    <PVStateValue key="opticalZoom" value="1" />',
            '    <PVStateValue key="objectiveLens" value="Nikon 16X" />',
            '    <PVStateValue key="bitDepth" value="13" />',
            '    <PVStateValue key="micronsPerPixel">',
            '      <IndexedValue index="XAxis" value="1.1" />',
            '      <IndexedValue index="YAxis" value="1.1" />',
            '      <IndexedValue index="ZAxis" value="5" />',
            "    </PVStateValue>",
            '    <PVStateValue key="positionCurrent">',
            '      <SubindexedValues index="XAxis">',
            '        <SubindexedValue subindex="0" value="10.0" />',
            "      </SubindexedValues>",
            '      <SubindexedValues index="YAxis">',
            '        <SubindexedValue subindex="0" value="20.0" />',
            "      </SubindexedValues>",
            '      <SubindexedValues index="ZAxis">',
            '        <SubindexedValue subindex="0" value="30.0" />',
            "      </SubindexedValues>",
            "    </PVStateValue>",
            "  </PVStateShard>",
        ]
    )
    (folder / f"{name}.xml").write_text(
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<PVScan version="5.6.64.400" date="1/2/2026 3:04:05 AM" notes="">\n'
        + state
        + "\n"
        + "\n".join(sequences)
        + "\n</PVScan>\n"
    )
    return folder


def _z_position(z: float) -> str:
    return (
        '      <PVStateShard>\n        <PVStateValue key="positionCurrent">\n'
        '          <SubindexedValues index="ZAxis">\n'
        f'            <SubindexedValue subindex="0" value="{z}" />\n'
        "          </SubindexedValues>\n        </PVStateValue>\n      </PVStateShard>\n"
    )


# -- Micro-Manager -------------------------------------------------------------------------------


def write_micromanager(
    folder: Path, frames: np.ndarray, *, fps: float = 20.0, files: int = 1
) -> Path:
    """A Micro-Manager 1.4 multipage OME-TIFF dataset (frames split over ``files`` files, each
    holding the whole dataset's OME-XML, as roiextractors may open any of them first) and its
    DisplaySettings.json."""
    folder.mkdir(parents=True, exist_ok=True)
    rows, columns = frames.shape[1:]
    names = [f"{folder.name}_MMStack_Pos0{'' if k == 0 else f'_{k}'}.ome.tif" for k in range(files)]
    parts = np.array_split(frames, files)
    summary = {
        "Width": columns,
        "Height": rows,
        "Channels": 1,
        "ChNames": ["Default"],
        "Frames": len(frames),
        "Slices": 1,
        "Positions": 1,
        "StartTime": "2026-01-02 03:04:05.000 +0000",
        "MicroManagerVersion": "1.4.22",
        "PixelType": "GRAY16",
    }
    summary_bytes = json.dumps(summary).encode()
    # After the TIFF header: the index map's, display settings' and comments' headers and
    # offsets (the first two filled in by _add_micromanager_maps), the summary's header, length.
    block = struct.pack("<8I", 0, 0, 0, 0, 0, 0, 2355492, len(summary_bytes)) + summary_bytes
    ome_type = {"u2": "uint16", "i2": "int16", "u1": "uint8"}[frames.dtype.str[1:]]
    tiff_data = []
    t = 0
    for k, (name, part) in enumerate(zip(names, parts, strict=True)):
        for ifd in range(len(part)):
            tiff_data.append(
                f'<TiffData FirstT="{t}" FirstZ="0" FirstC="0" IFD="{ifd}" PlaneCount="1">'
                f'<UUID FileName="{name}">urn:uuid:00000000-0000-0000-0000-{k:012d}</UUID>'
                "</TiffData>"
            )
            t += 1
    ome = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<OME xmlns="http://www.openmicroscopy.org/Schemas/OME/2016-06">'
        '<Image ID="Image:0" Name="Pos0"><Pixels ID="Pixels:0" DimensionOrder="XYCZT"'
        f' Type="{ome_type}" SizeX="{columns}" SizeY="{rows}" SizeC="1" SizeZ="1"'
        f' SizeT="{len(frames)}"><Channel ID="Channel:0:0" SamplesPerPixel="1"/>'
        f"{''.join(tiff_data)}</Pixels></Image></OME>"
    )
    for name, part in zip(names, parts, strict=True):
        write_raw_tiff(
            folder / name,
            part,
            bigtiff=False,
            after_header=block,
            descriptions=[ome] + [""] * (len(part) - 1),
            software="Micro-Manager",
            extra_ascii_tags={51123: json.dumps({"Frame": 0})},
        )
        _add_micromanager_maps(folder / name)
    (folder / "DisplaySettings.json").write_text(
        json.dumps({"map": {"PlaybackFPS": {"type": "DOUBLE", "scalar": fps}}})
    )
    return folder


def _add_micromanager_maps(path: Path) -> None:
    """Append the index map (channel, slice, frame, position, IFD offset of each page) and the
    display settings, and point the header at them, as Micro-Manager does."""
    import tifffile

    with tifffile.TiffFile(path) as tif:
        offsets = [page.offset for page in tif.pages]
    entries = np.zeros((len(offsets), 5), dtype="<u4")
    entries[:, 2] = np.arange(len(offsets))
    entries[:, 4] = offsets
    display = json.dumps([{"Color": -1, "Name": "Default", "Min": 0, "Max": 65535}]).encode()
    with path.open("r+b") as handle:
        index_offset = handle.seek(0, 2)
        handle.write(struct.pack("<II", 3453623, len(offsets)) + entries.tobytes())
        display_offset = handle.tell()
        handle.write(struct.pack("<II", 347834724, len(display)) + display)
        handle.seek(8)
        handle.write(struct.pack("<4I", 54773648, index_offset, 483765892, display_offset))
